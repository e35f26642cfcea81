/// A retry prompt that `sim retry` makes the simulated reader report: the
/// reader keeps waiting for another touch, as after a poor scan.
public enum SimulatedRetry: String, CaseIterable, Sendable, Hashable {
    /// The swipe was too short (FP_DEVICE_RETRY_TOO_SHORT).
    case tooShort = "too-short"
    /// The finger was not centred (FP_DEVICE_RETRY_CENTER_FINGER).
    case notCentered = "not-centered"
    /// The finger must be lifted first (FP_DEVICE_RETRY_REMOVE_FINGER).
    case removeFinger = "remove-finger"
    /// Poor scan quality, try again (FP_DEVICE_RETRY_GENERAL).
    case again

    /// libfprint's FpDeviceRetry number, which the virtual reader's
    /// `RETRY <n>` command takes.
    public var libfprintCode: Int {
        switch self {
        case .again: 0
        case .tooShort: 1
        case .notCentered: 2
        case .removeFinger: 3
        }
    }
}
