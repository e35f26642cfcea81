/// Which fingerprint reader to use: `--reader WHICH`, `TOUCHSTONE_READER`,
/// or `--sim`.
public enum ReaderSelection: Sendable, Hashable, CustomStringConvertible {
    /// The first reader libfprint finds (`auto`, the default).
    case automatic
    /// The simulator's virtual reader (`sim`).
    case simulator
    /// A reader id as `status` shows it.
    case id(String)

    /// The value as written on the command line.
    public var description: String {
        switch self {
        case .automatic: "auto"
        case .simulator: "sim"
        case .id(let id): id
        }
    }
}
