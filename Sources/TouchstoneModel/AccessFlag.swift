/// One way an item can be opened: a member of SecAccessControlCreateFlags.
/// The raw values are the words of an `--access` spec.
public enum AccessFlag: String, CaseIterable, Sendable, Codable, Hashable {
    /// A touch of any finger enrolled now or later (`.biometryAny`).
    case biometryAny = "biometry-any"
    /// A touch of a finger of the set enrolled when the item was stored; any
    /// change to the set closes this way for good (`.biometryCurrentSet`).
    case biometryCurrentSet = "biometry-current-set"
    /// The passcode, checked by the TPM (`.devicePasscode`).
    case devicePasscode = "passcode"

    /// Whether a finger satisfies it.
    public var isBiometric: Bool { self != .devicePasscode }

    /// Where the flag stands in the canonical spec: biometry before passcode.
    var canonicalOrder: Int {
        switch self {
        case .biometryAny: 0
        case .biometryCurrentSet: 1
        case .devicePasscode: 2
        }
    }
}
