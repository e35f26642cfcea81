/// Which TPM to use.
public enum TPMSelection: Sendable, Hashable, CustomStringConvertible {
    /// The simulator's swtpm, under the state folder's `sim/` (`sim`).
    case simulator
    /// A tss2 TCTI configuration string such as `device:/dev/tpmrm0` or
    /// `swtpm:path=/run/swtpm/sock`. Never empty: an empty one would fall
    /// through to anything listening on localhost:2321.
    case tcti(String)

    /// The kernel's resource-managed TPM, `/dev/tpmrm0`: what a machine
    /// with a TPM 2.0 has.
    public static let `default` = TPMSelection.device("/dev/tpmrm0")

    /// A TPM character device (`/dev/tpmrm0`, `/dev/tpm0`).
    public static func device(_ path: String) -> TPMSelection { .tcti("device:" + path) }

    /// `sim` is the simulator; anything else is a TCTI string.
    public init(parsing text: String) {
        self = text == "sim" ? .simulator : .tcti(text)
    }

    /// The value as `--tpm` takes it.
    public var description: String {
        switch self {
        case .simulator: "sim"
        case .tcti(let tcti): tcti
        }
    }
}
