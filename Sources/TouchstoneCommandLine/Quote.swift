/// Quoting of user input inside messages, so that an error never prints
/// terminal escapes, invisible text or a megabyte of argument back.
enum Quote {
    /// How many characters of a value a message shows.
    static let shownCharacters = 48

    /// `value` in single quotes, with control, bidirectional and
    /// replacement characters written as `\u{XXXX}`, cut after
    /// `shownCharacters` characters with `...` added.
    static func value(_ value: String) -> String {
        var shown = ""
        var count = 0
        for scalar in value.unicodeScalars {
            if count == shownCharacters {
                shown += "..."
                break
            }
            shown += TextRules.isUnsafe(scalar) ? "\\u{\(TextRules.hex(scalar))}" : String(scalar)
            count += 1
        }
        return "'\(shown)'"
    }
}
