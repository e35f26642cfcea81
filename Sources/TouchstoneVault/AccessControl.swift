/// One way an item can be opened (SecAccessControlCreateFlags' members).
public enum AccessFlag: String, CaseIterable, Sendable, Codable, Hashable {
    /// Any enrolled finger, now or later (`.biometryAny`).
    case biometryAny = "biometry-any"
    /// A finger of the set enrolled when the item was stored; any change to
    /// the set closes this way for good (`.biometryCurrentSet`).
    case biometryCurrentSet = "biometry-current-set"
    /// The passcode, checked by the TPM (`.devicePasscode`).
    case devicePasscode = "passcode"

    var isBiometric: Bool { self != .devicePasscode }
}

/// An item's access control: no flag (sealed to this TPM only), one flag,
/// or several joined by "or" (any one suffices) or "and" (all are needed).
public struct AccessControl: Sendable, Hashable, Codable, CustomStringConvertible {
    public enum Combination: String, Sendable, Hashable, Codable { case any, all }

    public let flags: [AccessFlag]
    public let combination: Combination

    public init(_ flags: [AccessFlag], combination: Combination = .any) {
        var seen = Set<AccessFlag>()
        self.flags = flags.filter { seen.insert($0).inserted }
        self.combination = self.flags.count < 2 ? .any : combination
    }

    /// Only this device's TPM is needed ("none").
    public static let none = AccessControl([])
    /// A finger or the passcode: `.userPresence`, the default.
    public static let userPresence = AccessControl([.biometryAny, .devicePasscode])
    public static let biometryAny = AccessControl([.biometryAny])
    public static let biometryCurrentSet = AccessControl([.biometryCurrentSet])
    public static let devicePasscode = AccessControl([.devicePasscode])

    public static func or(_ flags: AccessFlag...) -> AccessControl { AccessControl(flags, combination: .any) }
    public static func and(_ flags: AccessFlag...) -> AccessControl { AccessControl(flags, combination: .all) }

    /// Parses the CLI's spec: `none`, `user-presence`, a flag, or flags
    /// joined all by `|` or all by `&`.
    public init(spec: String) throws {
        switch spec {
        case "none": self = .none; return
        case "user-presence": self = .userPresence; return
        default: break
        }
        let hasOr = spec.contains("|"), hasAnd = spec.contains("&")
        guard !(hasOr && hasAnd) else { throw VaultError.invalidInput("access '\(spec)' mixes | and &") }
        let parts = spec.split(separator: hasAnd ? "&" : "|", omittingEmptySubsequences: false).map(String.init)
        var flags: [AccessFlag] = []
        for part in parts {
            guard let flag = AccessFlag(rawValue: part) else {
                throw VaultError.invalidInput("unknown access '\(part)' (none, user-presence, biometry-any, biometry-current-set, passcode)")
            }
            guard !flags.contains(flag) else { throw VaultError.invalidInput("access '\(part)' given twice") }
            flags.append(flag)
        }
        self.init(flags, combination: hasAnd ? .all : .any)
    }

    /// The canonical spec string (user-presence for biometry-any|passcode).
    public var description: String {
        if flags.isEmpty { return "none" }
        if self == .userPresence { return "user-presence" }
        return flags.map(\.rawValue).joined(separator: combination == .all ? "&" : "|")
    }

    /// The ways in: each alternative is the set of flags that must all be
    /// satisfied. "or" gives one alternative per flag; "and" gives one
    /// alternative with every flag; "none" gives one empty alternative.
    public var alternatives: [[AccessFlag]] {
        if flags.isEmpty { return [[]] }
        return combination == .all ? [flags] : flags.map { [$0] }
    }

    /// `alternatives.count`, without building them.
    var alternativeCount: Int { flags.isEmpty || combination == .all ? 1 : flags.count }

    public var needsBiometry: Bool { flags.contains(where: \.isBiometric) }
    public var allowsPasscode: Bool { flags.contains(.devicePasscode) }
}

/// When an item is available (kSecAttrAccessible…ThisDeviceOnly): always
/// sealed to this TPM, never exportable.
public enum Accessibility: String, Sendable, Codable, Hashable {
    /// The default.
    case whenUnlockedThisDeviceOnly = "when-unlocked-this-device-only"
    /// Only while a passcode is set: storing one needs a passcode, and
    /// removing the passcode deletes it.
    case whenPasscodeSetThisDeviceOnly = "when-passcode-set-this-device-only"
}
