/// Which fingerprint reader to use.
public enum ReaderSelection: Sendable, Hashable, CustomStringConvertible {
    /// The first reader libfprint finds (`auto`, the default).
    case automatic
    /// The simulator's virtual reader, at the state folder's `sim/reader` (`sim`).
    case simulator
    /// A reader by the id `status` shows ("driver/device-id"), or its device id.
    case id(String)
    /// libfprint's virtual reader listening on this socket (test rigs).
    case virtual(socket: String)

    /// `auto`, `sim`, or a reader id.
    public init(parsing text: String) {
        switch text {
        case "auto": self = .automatic
        case "sim": self = .simulator
        default: self = .id(text)
        }
    }

    /// The value as `--reader` takes it (a virtual socket: `virtual:PATH`).
    public var description: String {
        switch self {
        case .automatic: "auto"
        case .simulator: "sim"
        case .id(let id): id
        case .virtual(let socket): "virtual:" + socket
        }
    }
}
