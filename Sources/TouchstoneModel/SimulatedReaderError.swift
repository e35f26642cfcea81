/// A device error that `sim error CODE` makes the simulated reader report.
///
/// CODE is the name (`busy`, `too-hot`) or libfprint's FpDeviceError number
/// (`4`, `257`); both parse to the same case.
public enum SimulatedReaderError: String, CaseIterable, Sendable, Hashable {
    /// FP_DEVICE_ERROR_GENERAL
    case general
    /// FP_DEVICE_ERROR_NOT_SUPPORTED
    case notSupported = "not-supported"
    /// FP_DEVICE_ERROR_NOT_OPEN
    case notOpen = "not-open"
    /// FP_DEVICE_ERROR_ALREADY_OPEN
    case alreadyOpen = "already-open"
    /// FP_DEVICE_ERROR_BUSY
    case busy
    /// FP_DEVICE_ERROR_PROTO
    case proto
    /// FP_DEVICE_ERROR_DATA_INVALID
    case dataInvalid = "data-invalid"
    /// FP_DEVICE_ERROR_DATA_NOT_FOUND
    case dataNotFound = "data-not-found"
    /// FP_DEVICE_ERROR_DATA_FULL
    case dataFull = "data-full"
    /// FP_DEVICE_ERROR_DATA_DUPLICATE
    case dataDuplicate = "data-duplicate"
    /// FP_DEVICE_ERROR_REMOVED
    case removed
    /// FP_DEVICE_ERROR_TOO_HOT
    case tooHot = "too-hot"

    /// libfprint's FpDeviceError number, which the virtual reader's
    /// `ERROR <n>` command takes.
    public var libfprintCode: Int {
        switch self {
        case .general: 0
        case .notSupported: 1
        case .notOpen: 2
        case .alreadyOpen: 3
        case .busy: 4
        case .proto: 5
        case .dataInvalid: 6
        case .dataNotFound: 7
        case .dataFull: 8
        case .dataDuplicate: 9
        case .removed: 0x100
        case .tooHot: 0x101
        }
    }

    /// Parses a name or a libfprint number; `nil` for anything else.
    public init?(code: String) {
        if let named = SimulatedReaderError(rawValue: code) {
            self = named
        } else if let numbered = Self.allCases.first(where: { String($0.libfprintCode) == code }) {
            self = numbered
        } else {
            return nil
        }
    }
}
