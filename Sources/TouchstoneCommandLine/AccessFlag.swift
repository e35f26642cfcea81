/// One word of an `--access` spec: a way to authenticate before an item
/// opens. Mirrors SecAccessControlCreateFlags.
public enum AccessFlag: String, CaseIterable, Sendable, Hashable {
    /// A touch of any enrolled finger, or the passcode
    /// (kSecAccessControlUserPresence). Already a combination, so it
    /// stands alone in a spec.
    case userPresence = "user-presence"
    /// A touch of any finger enrolled now or later
    /// (kSecAccessControlBiometryAny).
    case biometryAny = "biometry-any"
    /// A touch of a finger enrolled when the item was stored; enrolling or
    /// removing a finger invalidates the item
    /// (kSecAccessControlBiometryCurrentSet).
    case biometryCurrentSet = "biometry-current-set"
    /// The passcode (kSecAccessControlDevicePasscode).
    case devicePasscode = "passcode"

    /// Whether the flag is a biometric one; a spec holds at most one.
    var isBiometric: Bool {
        self == .biometryAny || self == .biometryCurrentSet
    }

    /// Where the flag goes in a canonical spec: biometry before passcode.
    var canonicalOrder: Int {
        switch self {
        case .userPresence: 0
        case .biometryAny: 1
        case .biometryCurrentSet: 2
        case .devicePasscode: 3
        }
    }
}
