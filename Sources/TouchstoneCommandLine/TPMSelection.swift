/// Which TPM to use: `--tpm TCTI`, `TOUCHSTONE_TPM`, or `--sim`.
public enum TPMSelection: Sendable, Hashable, CustomStringConvertible {
    /// The simulator's swtpm (`sim`).
    case simulator
    /// A tss2 TCTI configuration string such as `device:/dev/tpmrm0`.
    case tcti(String)

    /// The TPM used when nothing says otherwise.
    public static let `default` = TPMSelection.tcti("device:/dev/tpmrm0")

    /// The value as written on the command line.
    public var description: String {
        switch self {
        case .simulator: "sim"
        case .tcti(let tcti): tcti
        }
    }
}
