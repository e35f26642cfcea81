/// A finger, by fprintd's name for it: the FINGER argument of `enroll` and
/// `unenroll`.
///
/// This module depends on nothing, so it keeps its own copy of the ten
/// names rather than importing TouchstoneFingerprint's `Finger`; the raw
/// values are the same strings, so `Finger(rawValue: name.rawValue)` maps
/// one to the other.
public enum FingerName: String, CaseIterable, Sendable, Hashable {
    case leftThumb = "left-thumb"
    case leftIndexFinger = "left-index-finger"
    case leftMiddleFinger = "left-middle-finger"
    case leftRingFinger = "left-ring-finger"
    case leftLittleFinger = "left-little-finger"
    case rightThumb = "right-thumb"
    case rightIndexFinger = "right-index-finger"
    case rightMiddleFinger = "right-middle-finger"
    case rightRingFinger = "right-ring-finger"
    case rightLittleFinger = "right-little-finger"

    /// The finger `enroll` uses when none is named.
    public static let `default` = FingerName.rightIndexFinger

    /// The ten names, comma-separated, for help and error messages.
    static var allNames: String {
        allCases.map(\.rawValue).joined(separator: ", ")
    }
}
