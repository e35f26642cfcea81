/// Why a touch was not good enough; the reader keeps waiting for another.
/// The texts follow fprintd's.
public enum RetryHint: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Poor scan quality (FP_DEVICE_RETRY_GENERAL).
    case tryAgain
    /// The swipe was too short (FP_DEVICE_RETRY_TOO_SHORT).
    case swipeTooShort
    /// The finger was not centred (FP_DEVICE_RETRY_CENTER_FINGER).
    case centerFinger
    /// The finger must be lifted first (FP_DEVICE_RETRY_REMOVE_FINGER).
    case removeFinger

    /// What to tell the user.
    public var message: String {
        switch self {
        case .tryAgain: "try again"
        case .swipeTooShort: "swipe too short"
        case .centerFinger: "centre your finger"
        case .removeFinger: "remove your finger and try again"
        }
    }

    public var description: String { message }
}
