/// User text inside messages, so that an error never prints terminal
/// escapes, invisible text or a megabyte of argument back.
package enum SafeText {
    /// How many characters of a value a message shows.
    package static let shownCharacters = 48

    /// `value` in single quotes, with control, bidirectional and
    /// replacement characters written as `\u{XXXX}`, cut after
    /// `shownCharacters` characters with `...` added.
    package static func quoted(_ value: String) -> String {
        "'\(shown(value, limit: shownCharacters))'"
    }

    /// `value` with control, bidirectional and replacement characters
    /// written as `\u{XXXX}`, whole: text that came from elsewhere (a
    /// label a Secret Service client gave, a relying party's name) on a
    /// line of output, where a tab or a newline would forge a field or a
    /// line and an escape sequence would drive the terminal.
    package static func escaped(_ value: String) -> String {
        guard value.unicodeScalars.contains(where: isUnsafe) else { return value }
        return shown(value, limit: nil)
    }

    /// `escaped`, cut after `limit` of the value's characters (Unicode
    /// scalars; nil: whole) with `...` added: a name from elsewhere inside
    /// a prompt or a message, which must stay one readable line.
    package static func shown(_ value: String, limit: Int? = 96) -> String {
        var shown = ""
        var count = 0
        for scalar in value.unicodeScalars {
            if count == limit {
                shown += "..."
                break
            }
            shown += isUnsafe(scalar) ? "\\u{\(hex(scalar))}" : String(scalar)
            count += 1
        }
        return shown
    }

    /// Control characters (C0, DEL, C1), which break output lines and
    /// terminals; the bidirectional formatting characters (U+202A-U+202E,
    /// U+2066-U+2069), which can make a name show as another; and U+FFFD,
    /// which is what undecodable (non-UTF-8) bytes become.
    package static func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0xFFFD: true
        default: false
        }
    }

    /// The scalar's code point in upper-case hex, at least four digits.
    package static func hex(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
