/// Something that happened during an operation, reported as it happens.
public enum ScanEvent: Sendable, Hashable, Codable {
    /// An enrolment touch was accepted: `completed` of `total` done.
    case stage(completed: Int, total: Int)
    /// A touch was rejected; the operation goes on.
    case retry(RetryHint)
}
