/// A finger, named as fprintd names it, so that prints enrolled here and
/// prints enrolled through fprintd use the same vocabulary.
public enum Finger: String, CaseIterable, Sendable, Hashable, Comparable, Codable {
    case leftThumb = "left-thumb"
    case leftIndex = "left-index-finger"
    case leftMiddle = "left-middle-finger"
    case leftRing = "left-ring-finger"
    case leftLittle = "left-little-finger"
    case rightThumb = "right-thumb"
    case rightIndex = "right-index-finger"
    case rightMiddle = "right-middle-finger"
    case rightRing = "right-ring-finger"
    case rightLittle = "right-little-finger"

    /// fprintd's name for the finger (`right-index-finger`); also the
    /// record name in the enrolment store.
    public var fprintdName: String { rawValue }

    /// Parses fprintd's name; `nil` for anything else.
    public init?(fprintdName: String) {
        self.init(rawValue: fprintdName)
    }

    /// The finger `enroll` uses when none is named.
    public static let `default` = Finger.rightIndex

    /// The ten names, comma-separated, for help and error messages.
    package static var allNames: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// Orders by fprintd name, the order used for the domain state.
    public static func < (lhs: Finger, rhs: Finger) -> Bool {
        lhs.rawValue < rhs.rawValue
    }
}
