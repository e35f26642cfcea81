/// The value of `--access SPEC`: what it takes to read an item back.
///
/// Grammar: `none`, one flag, or several flags joined all by `|` (any one
/// suffices) or all by `&` (all are needed). Spaces around a flag are
/// ignored. Rules beyond the contract's grammar, all usage errors:
/// - `|` and `&` cannot be mixed (there are no parentheses);
/// - a flag cannot appear twice;
/// - `none` and `user-presence` stand alone (`user-presence` already means
///   `biometry-any|passcode`);
/// - `biometry-any` and `biometry-current-set` cannot be combined (as
///   SecAccessControlCreateWithFlags refuses them together).
///
/// `description` gives the canonical spec: flags in the order biometry,
/// passcode, whatever order they were written in, joined by the
/// combination's operator. `user-presence` is kept as written, not expanded,
/// and `biometry-any|passcode` is not collapsed to `user-presence`: `list`
/// shows what the user asked for. The two are the same requirement; compare
/// `expanded` values to treat them as one.
public struct AccessSpec: Sendable, Hashable, CustomStringConvertible {
    /// How several flags combine.
    public enum Combination: String, Sendable, Hashable {
        /// Any one flag suffices (`|`).
        case any = "|"
        /// Every flag is needed (`&`).
        case all = "&"
    }

    /// The flags in canonical order; empty for `none`.
    public let flags: [AccessFlag]
    /// How the flags combine; always `.any` for zero or one flag.
    public let combination: Combination

    /// `none`: no authentication (the item is still sealed to this
    /// machine's TPM).
    public static let none = AccessSpec(checked: [], .any)
    /// `user-presence`, the default.
    public static let userPresence = AccessSpec(checked: [.userPresence], .any)
    /// The longest spec text accepted, in UTF-8 bytes; the longest valid one
    /// is far shorter.
    public static let maximumLength = 256

    /// The spec used when `--access` is not given.
    public static let `default` = userPresence

    /// A spec from flags known to satisfy the rules.
    private init(checked flags: [AccessFlag], _ combination: Combination) {
        self.flags = flags.sorted { $0.canonicalOrder < $1.canonicalOrder }
        self.combination = flags.count > 1 ? combination : .any
    }

    /// Builds a spec from flags, enforcing the same rules as parsing.
    public init(flags: [AccessFlag], combination: Combination) throws(AccessSpecError) {
        try Self.check(flags)
        self.init(checked: flags, combination)
    }

    /// Parses an `--access` value.
    public init(parsing text: String) throws(AccessSpecError) {
        guard text.utf8.count <= Self.maximumLength else {
            throw AccessSpecError("too long: \(text.utf8.count) bytes, at most \(Self.maximumLength) allowed")
        }
        let hasAny = text.contains(Character("|"))
        let hasAll = text.contains(Character("&"))
        if hasAny && hasAll {
            throw AccessSpecError("'|' and '&' cannot be mixed; join all flags with '|' (any one suffices) or all with '&' (all are needed)")
        }
        let combination: Combination = hasAll ? .all : .any
        let words = text.split(separator: Character(combination.rawValue), omittingEmptySubsequences: false)
            .map { $0.trimmingSpaces() }
        if words == ["none"] {
            self = .none
            return
        }
        var flags: [AccessFlag] = []
        for word in words {
            if word.isEmpty {
                throw AccessSpecError("a flag is missing (empty spec, or a '\(combination.rawValue)' with nothing on one side)")
            }
            if word == "none" {
                throw AccessSpecError("'none' cannot be combined with other flags")
            }
            guard let flag = AccessFlag(rawValue: word) else {
                throw AccessSpecError("unknown flag \(Quote.value(word)); use none, \(AccessFlag.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            flags.append(flag)
        }
        try Self.check(flags)
        self.init(checked: flags, combination)
    }

    /// The rules a list of flags must satisfy (see the type's comment).
    private static func check(_ flags: [AccessFlag]) throws(AccessSpecError) {
        var seen: Set<AccessFlag> = []
        for flag in flags where !seen.insert(flag).inserted {
            throw AccessSpecError("'\(flag.rawValue)' appears twice")
        }
        if flags.count > 1 && flags.contains(.userPresence) {
            throw AccessSpecError("'user-presence' already means 'biometry-any|passcode' and cannot be combined; write the flags out instead")
        }
        if flags.filter(\.isBiometric).count > 1 {
            throw AccessSpecError("'biometry-any' and 'biometry-current-set' cannot be combined; choose one")
        }
    }

    /// The same requirement with `user-presence` written out as
    /// `biometry-any|passcode`; other specs are returned unchanged.
    public var expanded: AccessSpec {
        flags == [.userPresence] ? AccessSpec(checked: [.biometryAny, .devicePasscode], .any) : self
    }

    /// The canonical spec string (see the type's comment).
    public var description: String {
        flags.isEmpty ? "none" : flags.map(\.rawValue).joined(separator: combination.rawValue)
    }
}

/// Why an `--access` spec was refused.
public struct AccessSpecError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, in one line.
    public let description: String

    init(_ description: String) { self.description = description }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs.
    func trimmingSpaces() -> String {
        var slice = self[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}
