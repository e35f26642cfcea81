/// The checks on free text from the command line and the environment:
/// service and account names, labels, comments, reasons, finger ids, paths
/// and TCTI strings.
///
/// Refused, as usage errors: text over its byte limit; the NUL byte and
/// every other control character (C0, DEL, C1), which would break output
/// lines and terminals; the bidirectional formatting characters
/// (U+202A-U+202E, U+2066-U+2069), which can make `list` show a name as
/// another; and U+FFFD, which is what undecodable (non-UTF-8) argument
/// bytes become, so the name would not be the one the user typed.
enum TextRules {
    /// The longest SERVICE, ACCOUNT, label, comment, reason or finger id, in
    /// UTF-8 bytes.
    static let maximumTextBytes = 1024
    /// The longest path or TCTI string, in UTF-8 bytes (PATH_MAX).
    static let maximumPathBytes = 4096

    /// Checks `value` and returns it. `what` names it in the message
    /// (`<service>`, `--label`, `TOUCHSTONE_HOME`).
    static func checked(_ value: String, _ what: String, allowEmpty: Bool = false,
                        maximumBytes: Int = maximumTextBytes) throws(UsageError) -> String {
        if value.isEmpty {
            if allowEmpty { return value }
            throw UsageError("\(what) must not be empty")
        }
        let bytes = value.utf8.count
        if bytes > maximumBytes {
            throw UsageError("\(what) is too long: \(bytes) bytes, at most \(maximumBytes) allowed")
        }
        for scalar in value.unicodeScalars where isUnsafe(scalar) {
            switch scalar.value {
            case 0:
                throw UsageError("\(what) must not contain a NUL byte")
            case 0xFFFD:
                throw UsageError("\(what) is not valid UTF-8 (it contains U+FFFD, the replacement character)")
            case 0x202A...0x202E, 0x2066...0x2069:
                throw UsageError("\(what) must not contain a bidirectional formatting character (U+\(hex(scalar)))")
            default:
                throw UsageError("\(what) must not contain a control character (U+\(hex(scalar)))")
            }
        }
        return value
    }

    /// Whether the scalar is one of the refused ones (see the type's comment).
    static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool { SafeText.isUnsafe(scalar) }

    /// The scalar's code point in upper-case hex, at least four digits.
    static func hex(_ scalar: Unicode.Scalar) -> String { SafeText.hex(scalar) }
}
