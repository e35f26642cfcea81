/// An item's access control: no flag (sealed to this TPM only), one flag,
/// or several joined by "or" (any one suffices) or "and" (all are needed).
/// SecAccessControl for Linux.
///
/// Flags are kept in canonical order (biometry, then passcode), so two
/// access controls that require the same are equal however they were
/// written. `description` prints the canonical spec, which
/// `init(parsing:)` reads back (AccessControl+Grammar.swift).
public struct AccessControl: Sendable, Hashable {
    /// How several flags combine.
    public enum Combination: String, Sendable, Hashable, Codable {
        /// Any one flag suffices (`|`).
        case any
        /// Every flag is needed (`&`).
        case all

        /// The operator between flags in a spec.
        var symbol: Character { self == .any ? "|" : "&" }
    }

    /// The flags in canonical order; empty for `none`.
    public let flags: [AccessFlag]
    /// How the flags combine; always `.any` for fewer than two flags.
    public let combination: Combination

    /// An access control from `flags`. Both biometric flags together is a
    /// programming error, as SecAccessControlCreateWithFlags refuses them:
    /// choose `.biometryAny` or `.biometryCurrentSet`.
    public init(_ flags: [AccessFlag], combination: Combination = .any) {
        precondition(!(flags.contains(.biometryAny) && flags.contains(.biometryCurrentSet)),
                     "biometryAny and biometryCurrentSet cannot be combined")
        self.init(stored: flags, combination: combination)
    }

    /// An access control as an item record holds it: any combination of
    /// flags, including both biometric ones, which earlier releases accepted
    /// (such items still open). Duplicates are dropped.
    package init(stored flags: [AccessFlag], combination: Combination) {
        var seen = Set<AccessFlag>()
        self.flags = flags.filter { seen.insert($0).inserted }.sorted { $0.canonicalOrder < $1.canonicalOrder }
        self.combination = self.flags.count < 2 ? .any : combination
    }

    /// Only this device's TPM is needed (`none`).
    public static let none = AccessControl([])
    /// A finger or the passcode (`user-presence`, `.userPresence`): the default.
    public static let userPresence = AccessControl([.biometryAny, .devicePasscode])
    public static let biometryAny = AccessControl([.biometryAny])
    public static let biometryCurrentSet = AccessControl([.biometryCurrentSet])
    public static let devicePasscode = AccessControl([.devicePasscode])

    /// Any one of `flags` suffices.
    public static func or(_ flags: AccessFlag...) -> AccessControl { AccessControl(flags, combination: .any) }
    /// All of `flags` are needed.
    public static func and(_ flags: AccessFlag...) -> AccessControl { AccessControl(flags, combination: .all) }

    /// The ways in: each alternative is the set of flags that must all be
    /// satisfied. "or" gives one alternative per flag; "and" gives one
    /// alternative with every flag; "none" gives one empty alternative.
    public var alternatives: [[AccessFlag]] {
        if flags.isEmpty { return [[]] }
        return combination == .all ? [flags] : flags.map { [$0] }
    }

    /// `alternatives.count`, without building them.
    package var alternativeCount: Int { flags.isEmpty || combination == .all ? 1 : flags.count }

    /// Whether some way in needs a finger.
    public var needsBiometry: Bool { flags.contains(where: \.isBiometric) }
    /// Whether the passcode is one of the flags.
    public var allowsPasscode: Bool { flags.contains(.devicePasscode) }
}

extension AccessControl: Codable {
    private enum CodingKeys: String, CodingKey { case flags, combination }

    /// As the first release's JSON records hold it:
    /// `{"flags": ["biometry-any"], "combination": "any"}`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(stored: try container.decode([AccessFlag].self, forKey: .flags),
                  combination: try container.decode(Combination.self, forKey: .combination))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(flags, forKey: .flags)
        try container.encode(combination, forKey: .combination)
    }
}
