/// Why a fingerprint operation failed. Retry prompts are not errors (they are
/// `ScanEvent.retry`), and neither is a non-matching finger (verify returns
/// `false`, identify returns `nil`).
package enum FingerprintError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No reader with this identity is attached (or it was unplugged and is
    /// gone from libfprint's list).
    case readerNotFound(ReaderIdentity)
    /// The reader cannot be used now (FP_DEVICE_ERROR_GENERAL, NOT_SUPPORTED,
    /// NOT_OPEN, ALREADY_OPEN, or a failure outside libfprint's own codes).
    case notAvailable(reason: String)
    /// The reader does not offer this operation (for example identify or list
    /// on a reader without storage).
    case notSupported(operation: String)
    /// Another program holds the reader (FP_DEVICE_ERROR_BUSY); usually
    /// fprintd, serving a login or lock-screen prompt.
    case busy
    /// The reader went away (FP_DEVICE_ERROR_REMOVED).
    case disconnected
    /// The reader is too hot and must cool down (FP_DEVICE_ERROR_TOO_HOT).
    case tooHot
    /// The reader answered something libfprint did not understand
    /// (FP_DEVICE_ERROR_PROTO).
    case protocolError
    /// The reader refused data it was given (FP_DEVICE_ERROR_DATA_INVALID).
    case dataInvalid
    /// The print is not on the reader (FP_DEVICE_ERROR_DATA_NOT_FOUND).
    case dataNotFound
    /// The reader's storage is full (FP_DEVICE_ERROR_DATA_FULL).
    case dataFull
    /// This finger is already enrolled on the reader
    /// (FP_DEVICE_ERROR_DATA_DUPLICATE).
    case dataDuplicate
    /// No usable touch arrived within the operation's timeout.
    case timedOut
    /// The operation was cancelled (Swift task cancellation).
    case cancelled
    /// Print data that libfprint cannot read: empty, truncated or junk. It
    /// never reaches a libfprint call that could abort the process.
    case invalidPrint(finger: Finger?, reason: String)
    /// A print belongs to another reader than the one asked to use it.
    case wrongReader(expected: ReaderIdentity, actual: ReaderIdentity)
    /// A stored enrolment record cannot be read; other fingers are unaffected.
    case corruptRecord(finger: Finger, reason: String)
    /// No print is stored for this finger.
    case notEnrolled(Finger)
    /// No finger at all is enrolled for this user on this reader.
    case nothingEnrolled
    /// The enrolment store could not be read or written.
    case storage(reason: String)

    package var description: String {
        switch self {
        case .readerNotFound(let id): "fingerprint reader \(id) not found"
        case .notAvailable(let reason): "fingerprint reader not available: \(reason)"
        case .notSupported(let op): "this fingerprint reader does not support \(op)"
        case .busy:
            "fingerprint reader is busy: another program holds it, most likely fprintd "
                + "(a login or lock-screen prompt); finish or cancel that prompt and try again"
        case .disconnected: "fingerprint reader was disconnected"
        case .tooHot: "fingerprint reader is too hot; let it cool down and try again"
        case .protocolError: "fingerprint reader protocol error"
        case .dataInvalid: "fingerprint reader rejected the print data as invalid"
        case .dataNotFound: "print not found on the fingerprint reader"
        case .dataFull: "fingerprint reader storage is full"
        case .dataDuplicate: "this finger is already enrolled on the fingerprint reader"
        case .timedOut: "no finger was scanned in time"
        case .cancelled: "fingerprint operation cancelled"
        case .invalidPrint(let finger, let reason):
            if let finger { "the stored print for \(finger.fprintdName) is unusable: \(reason)" }
            else { "unusable print data: \(reason)" }
        case .wrongReader(let expected, let actual):
            "the print belongs to reader \(actual), not \(expected)"
        case .corruptRecord(let finger, let reason):
            "the enrolment record for \(finger.fprintdName) is corrupt: \(reason)"
        case .notEnrolled(let finger): "\(finger.fprintdName) is not enrolled"
        case .nothingEnrolled: "no finger is enrolled on this reader"
        case .storage(let reason): "enrolment store error: \(reason)"
        }
    }
}
