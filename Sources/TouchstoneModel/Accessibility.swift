/// When an item is available (kSecAttrAccessible…ThisDeviceOnly): always
/// sealed to this TPM, never exportable.
public enum Accessibility: String, Sendable, Codable, Hashable, CaseIterable {
    /// The default.
    case whenUnlockedThisDeviceOnly = "when-unlocked-this-device-only"
    /// Only while a passcode is set: storing one needs a passcode, and
    /// removing the passcode deletes it.
    case whenPasscodeSetThisDeviceOnly = "when-passcode-set-this-device-only"
}
