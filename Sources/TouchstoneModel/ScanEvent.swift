/// Something that happened during an operation, reported as it happens.
public enum ScanEvent: Sendable, Hashable, Codable {
    /// An enrolment touch was accepted: `completed` of `total` done.
    case stage(completed: Int, total: Int)
    /// A touch was rejected; the operation goes on.
    case retry(RetryHint)
    /// A touch matched and another of the same finger is wanted
    /// (`MatchingTouches.two`): `matched` of `total` touches done.
    case touchAgain(matched: Int, total: Int)
}
