/// The one grammar of access-control specs, for `--access`, the stored
/// records' canonical text and the API:
///
///     spec  = "none" | "user-presence" | flag { "|" flag } | flag { "&" flag }
///     flag  = "biometry-any" | "biometry-current-set" | "passcode"
///
/// Spaces and tabs around a word are ignored. Beyond the grammar: a flag
/// appears once; `|` and `&` are not mixed (there are no parentheses);
/// `none` and `user-presence` stand alone (`user-presence` is
/// `biometry-any|passcode`); the two biometric flags are not combined (as
/// SecAccessControlCreateWithFlags refuses them together).
extension AccessControl: CustomStringConvertible {
    /// The longest spec text accepted, in UTF-8 bytes; the longest valid
    /// one is far shorter.
    public static let maximumSpecLength = 256

    /// Parses a spec.
    public init(parsing text: String) throws(AccessControlSyntaxError) {
        guard text.utf8.count <= Self.maximumSpecLength else { throw .tooLong(bytes: text.utf8.count) }
        let hasAny = text.contains("|"), hasAll = text.contains("&")
        if hasAny && hasAll { throw .mixedOperators }
        let combination: Combination = hasAll ? .all : .any
        let words = text.split(separator: combination.symbol, omittingEmptySubsequences: false).map(Self.trimmed)
        if words == ["none"] { self = .none; return }
        if words == ["user-presence"] { self = .userPresence; return }
        var flags: [AccessFlag] = []
        for word in words {
            switch word {
            case "": throw .missingFlag(combination.symbol)
            case "none": throw .noneCombined
            case "user-presence": throw .userPresenceCombined
            default:
                guard let flag = AccessFlag(rawValue: word) else { throw .unknownFlag(word) }
                guard !flags.contains(flag) else { throw .repeated(flag) }
                flags.append(flag)
            }
        }
        if flags.contains(.biometryAny) && flags.contains(.biometryCurrentSet) { throw .biometricFlagsCombined }
        self.init(flags, combination: combination)
    }

    /// The canonical spec: `none`, `user-presence` for
    /// `biometry-any|passcode`, else the flags in canonical order joined by
    /// the combination's operator.
    public var description: String {
        if flags.isEmpty { return "none" }
        if self == .userPresence { return "user-presence" }
        return flags.map(\.rawValue).joined(separator: String(combination.symbol))
    }

    private static func trimmed(_ word: Substring) -> String {
        var slice = word[...]
        while let first = slice.first, first == " " || first == "\t" { slice = slice.dropFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice = slice.dropLast() }
        return String(slice)
    }
}

/// Why a spec was refused.
public enum AccessControlSyntaxError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Over `AccessControl.maximumSpecLength` bytes.
    case tooLong(bytes: Int)
    /// `|` and `&` in one spec.
    case mixedOperators
    /// An empty word: an empty spec, or an operator with nothing on one side.
    case missingFlag(Character)
    /// `none` with other words.
    case noneCombined
    /// `user-presence` with other words.
    case userPresenceCombined
    /// A word that is not a flag.
    case unknownFlag(String)
    /// A flag written twice.
    case repeated(AccessFlag)
    /// `biometry-any` with `biometry-current-set`.
    case biometricFlagsCombined

    public var description: String {
        switch self {
        case .tooLong(let bytes):
            "too long: \(bytes) bytes, at most \(AccessControl.maximumSpecLength) allowed"
        case .mixedOperators:
            "'|' and '&' cannot be mixed; join all flags with '|' (any one suffices) or all with '&' (all are needed)"
        case .missingFlag(let symbol):
            "a flag is missing (empty spec, or a '\(symbol)' with nothing on one side)"
        case .noneCombined: "'none' cannot be combined with other flags"
        case .userPresenceCombined:
            "'user-presence' already means 'biometry-any|passcode' and cannot be combined; write the flags out instead"
        case .unknownFlag(let word):
            "unknown flag \(SafeText.quoted(word)); use none, user-presence, \(AccessFlag.allCases.map(\.rawValue).joined(separator: ", "))"
        case .repeated(let flag): "'\(flag.rawValue)' appears twice"
        case .biometricFlagsCombined: "'biometry-any' and 'biometry-current-set' cannot be combined; choose one"
        }
    }
}
