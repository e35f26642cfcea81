/// roff source for man(7) pages: text escaped so that groff prints it as
/// written, and the few macros the man pages use. Every line it returns
/// ends without a newline; pages join them with one.
enum Roff {
    /// `text` as roff prints it: a backslash as `\e`, a hyphen as `\-` (a
    /// minus in options, which man-db shows as the ASCII hyphen that can be
    /// copied into a shell), quotes as `\(aq` and `\(dq` (straight, never
    /// typographic), other characters outside ASCII as `\[uXXXX]`.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\e"
            case "-": out += "\\-"
            case "'": out += "\\(aq"
            case "\"": out += "\\(dq"
            case "\n", "\t": out += " "
            default:
                if scalar.isASCII && scalar.value >= 0x20 && scalar.value != 0x7F {
                    out.unicodeScalars.append(scalar)
                } else {
                    out += "\\[u" + SafeText.hex(scalar) + "]"
                }
            }
        }
        return out
    }

    /// A text line (already escaped) that roff never reads as a request: a
    /// leading `.` gets the zero-width `\&` before it.
    static func textLine(_ escaped: String) -> String {
        escaped.hasPrefix(".") ? "\\&" + escaped : escaped
    }

    /// One paragraph of plain text, as a text line.
    static func paragraph(_ text: String) -> String {
        textLine(escape(text.trimmingSpaces))
    }

    /// A macro with one argument, quoted: `.SH "EXIT STATUS"`.
    static func macro(_ name: String, _ argument: String) -> String {
        ".\(name) \"\(escape(argument))\""
    }

    /// `text` in bold, escaped.
    static func bold(_ text: String) -> String { "\\fB" + escape(text) + "\\fR" }

    /// `text` in italics, escaped.
    static func italic(_ text: String) -> String { "\\fI" + escape(text) + "\\fR" }

    /// A command line as a synopsis shows it: the program and its
    /// subcommands in bold, every `<value>` in italics between its angle
    /// brackets, the rest (options, brackets) as written.
    static func synopsis(command: String, rest: String) -> String {
        textLine(bold(command) + (rest.isEmpty ? "" : " " + values(rest)))
    }

    /// `text` escaped, each `<name>` in it shown as `<` italic name `>`.
    static func values(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
            out += escape(String(rest[..<open])) + "<" + italic(String(rest[rest.index(after: open)..<close])) + ">"
            rest = rest[rest.index(after: close)...]
        }
        return out + escape(String(rest))
    }

    /// A tagged paragraph (`.TP`): the tag on its own line, then the text.
    static func tagged(_ tag: String, _ text: String) -> [String] {
        [".TP", textLine(tag), paragraph(text)]
    }

    /// An option's tag: each spelling in bold, its value in italics.
    static func optionTag(_ option: OptionDescription) -> String {
        option.names.map(bold).joined(separator: ", ") + (option.valueName.map { " <" + italic($0) + ">" } ?? "")
    }
}

extension String {
    /// The string without leading and trailing spaces.
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
