internal import CFPrint
import Foundation

/// A GError copied into Swift: its domain, code and message, kept raw so the
/// mapping below can be tested and logged. The C error is freed by the caller.
struct GLibError: Error, Sendable, Hashable, CustomStringConvertible {
    let domain: UInt32
    let code: Int32
    let message: String

    /// Copies `error` (not freed here).
    init(_ error: UnsafeMutablePointer<GError>) {
        domain = error.pointee.domain
        code = error.pointee.code
        message = error.pointee.message.map { String(cString: $0) } ?? ""
    }

    init(domain: UInt32, code: Int32, message: String) {
        self.domain = domain
        self.code = code
        self.message = message
    }

    /// Copies and frees `error`, clearing the caller's pointer.
    static func take(_ error: inout UnsafeMutablePointer<GError>?) -> GLibError? {
        guard let e = error else { return nil }
        defer { g_error_free(e); error = nil }
        return GLibError(e)
    }

    var isRetry: Bool { domain == fp_device_retry_quark() }
    var isDeviceError: Bool { domain == fp_device_error_quark() }
    var isCancelled: Bool {
        domain == g_io_error_quark() && code == Int32(G_IO_ERROR_CANCELLED.rawValue)
    }

    /// The user hint for a FP_DEVICE_RETRY code; `nil` for other domains.
    /// Unknown retry codes fall back to the generic hint.
    var retryHint: RetryHint? {
        guard isRetry else { return nil }
        switch UInt32(bitPattern: code) {
        case FP_DEVICE_RETRY_TOO_SHORT.rawValue: return .swipeTooShort
        case FP_DEVICE_RETRY_CENTER_FINGER.rawValue: return .centerFinger
        case FP_DEVICE_RETRY_REMOVE_FINGER.rawValue: return .removeFinger
        default: return .tryAgain
        }
    }

    /// FP_DEVICE_ERROR_DATA_NOT_FOUND: during verify or identify a
    /// match-on-chip reader says so when the touched finger is none it
    /// holds, which is a "no match", as fprintd treats it.
    var isNotFound: Bool {
        isDeviceError && UInt32(bitPattern: code) == FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue
    }

    /// Whether a failure to open a reader means another program holds it:
    /// libfprint's BUSY code, or the USB layer's "Resource busy" (GUsb's
    /// error domain is not exported to us, so its message is checked).
    var meansReaderHeld: Bool {
        if isDeviceError { return UInt32(bitPattern: code) == FP_DEVICE_ERROR_BUSY.rawValue }
        return !isCancelled && message.lowercased().contains("busy")
    }

    /// The typed error for a failure. Cancellation is decided by the caller
    /// (user cancel or timeout); here it maps to `.cancelled`.
    var fingerprintError: FingerprintError {
        if isCancelled { return .cancelled }
        if domain == g_io_error_quark() && code == Int32(G_IO_ERROR_TIMED_OUT.rawValue) {
            return .timedOut
        }
        guard isDeviceError else {
            return .notAvailable(reason: message.isEmpty ? "libfprint error \(code)" : sentence)
        }
        switch UInt32(bitPattern: code) {
        case FP_DEVICE_ERROR_BUSY.rawValue: return .busy
        case FP_DEVICE_ERROR_PROTO.rawValue: return .protocolError
        case FP_DEVICE_ERROR_DATA_INVALID.rawValue: return .dataInvalid
        case FP_DEVICE_ERROR_DATA_NOT_FOUND.rawValue: return .dataNotFound
        case FP_DEVICE_ERROR_DATA_FULL.rawValue: return .dataFull
        case FP_DEVICE_ERROR_DATA_DUPLICATE.rawValue: return .dataDuplicate
        case FP_DEVICE_ERROR_REMOVED.rawValue: return .disconnected
        case FP_DEVICE_ERROR_TOO_HOT.rawValue: return .tooHot
        default:
            // GENERAL, NOT_SUPPORTED, NOT_OPEN, ALREADY_OPEN and future codes.
            return .notAvailable(reason: message.isEmpty ? "device error \(code)" : sentence)
        }
    }

    /// libfprint's message as part of a sentence: "The device needs to be
    /// opened first!" becomes "the device needs to be opened first".
    var sentence: String {
        var text = message.trimmingCharacters(in: .whitespaces)
        while let last = text.last, last == "!" || last == "." { text.removeLast() }
        guard let first = text.first, first.isUppercase,
              text.dropFirst().first.map({ !$0.isUppercase }) ?? true else { return text }  // keep "USB ..."
        return first.lowercased() + text.dropFirst()
    }

    var description: String { "GError(domain \(domain), code \(code)): \(message)" }
}
