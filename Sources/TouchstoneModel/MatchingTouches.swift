/// How many touches of one finger a biometric authentication takes, each
/// matched by the reader's matcher (libfprint's on image sensors).
///
/// One touch is what fprintd and iOS take. With two, the second touch must
/// match the same finger as the first: a stranger's finger that libfprint's
/// matcher takes for the owner's once seldom does it twice, and the owner
/// is refused a little more often (docs/fingerprint.md has the measured
/// rates). A vault's setting, changed with the passcode
/// (`touchstone matching --touches N`).
public enum MatchingTouches: Int, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    case one = 1
    case two = 2

    public var description: String {
        switch self {
        case .one: "1 touch"
        case .two: "2 touches of one finger"
        }
    }
}
