import Foundation
import TestRigs
import Testing
@testable import TouchstoneCommandLine

/// The man pages list what `--help` shows: every command, subcommand,
/// argument, option, environment variable and exit code, read from the
/// help text itself (not from the table), so the two never drift; and
/// groff reads every page without a warning.
@Suite("Man pages")
struct ManPageTests {
    static let pages = ManPage.all(date: "2026-01-31")

    static func page(_ name: String) -> ManPage {
        pages.first { $0.name == name }!
    }

    @Test("touchstone(1) has each command's usage, arguments, options and subcommands, as its help shows them",
          arguments: allCommandPaths)
    func commandInPage(_ path: [String]) throws {
        let help = try #require(helpText(["help"] + path))
        let rootHelp = try #require(helpText(["--help"]))
        let missing = Coverage.missing(help: help, path: path, rootHelp: rootHelp,
                                       page: ManText(roff: Self.page("touchstone").source))
        #expect(missing.isEmpty, "touchstone(1) lacks, for \(path): \(missing)")
    }

    @Test("touchstone(1) has the help's environment variables and exit codes")
    func environmentAndExitCodes() throws {
        let help = HelpText(try #require(helpText(["--help"])))
        let page = ManText(roff: Self.page("touchstone").source)
        #expect(!help.labels("ENVIRONMENT").isEmpty && !help.labels("EXIT CODES").isEmpty)
        for label in help.labels("ENVIRONMENT") { #expect(page.has(label, in: "ENVIRONMENT"), "\(label)") }
        for label in help.labels("EXIT CODES") { #expect(page.has(label, in: "EXIT STATUS"), "\(label)") }
    }

    @Test("touchstoned(8) and git-credential-touchstone(1) have their help's usage and options")
    func otherPrograms() throws {
        guard case .help(let daemonHelp) = TouchstonedCommandLine.parse(arguments: ["--help"]),
              case .help(let gitHelp) = GitCredentialCommandLine.parse(arguments: ["--help"], environment: [:]) else {
            Issue.record("no help text")
            return
        }
        for (name, helpText) in [("touchstoned", daemonHelp), ("git-credential-touchstone", gitHelp)] {
            let help = HelpText(helpText)
            let page = ManText(roff: Self.page(name).source)
            #expect(help.labels("OPTIONS").count >= 8)
            for label in help.labels("OPTIONS") { #expect(page.has(label, in: "OPTIONS"), "\(name): \(label)") }
            // touchstoned's second form leaves out the program's name; the page writes it.
            for form in help.usage.components(separatedBy: " | ") {
                let line = form.hasPrefix(name + " ") ? form : name + " " + form
                #expect(page.has(line, in: "SYNOPSIS"), "\(name): \(line)")
            }
        }
    }

    @Test("a page without one of the help's entries is caught", arguments: [
        (["sim", "touch"], "--count <n>"),          // a command's own option, in its subsection
        (["list"], "--json"),                       // a global option, in OPTIONS
        (["passcode"], "change"),                   // a subcommand
        (["get"], "<account>"),                     // an argument
    ])
    func dropped(_ path: [String], _ label: String) throws {
        let help = try #require(helpText(["help"] + path))
        let rootHelp = try #require(helpText(["--help"]))
        let full = ManText(roff: Self.page("touchstone").source)
        #expect(Coverage.missing(help: help, path: path, rootHelp: rootHelp, page: full).isEmpty)
        let cut = full.without(label)
        #expect(Coverage.missing(help: help, path: path, rootHelp: rootHelp, page: cut).contains(label))
    }

    @Test("groff reads every page without a warning, and man-db finds its NAME line", arguments: pages)
    func groffReadsIt(_ page: ManPage) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("touchstone-man-\(getpid())-\(page.name)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent(page.fileName)
        try Data(page.source.utf8).write(to: file)

        let groff = try ChildProcessResult.run("/usr/bin/groff", ["-man", "-ww", "-z", file.path])
        #expect(groff.status == 0 && groff.output.isEmpty, "groff on \(page.fileName): \(groff.output)")
        // lexgrog is how mandb reads the whatis line: "NAME - text".
        let whatis = try ChildProcessResult.run("/usr/bin/lexgrog", [file.path])
        #expect(whatis.status == 0 && whatis.output.contains("\(page.name) - "), "lexgrog: \(whatis.output)")
    }

    @Test("roff escapes: hyphens, backslashes, quotes, a leading dot, non-ASCII")
    func escapes() {
        #expect(Roff.escape("--a\\b 'c' \"d\"") == "\\-\\-a\\eb \\(aqc\\(aq \\(dqd\\(dq")
        #expect(Roff.escape("caf\u{E9}") == "caf\\[u00E9]")
        #expect(Roff.paragraph(".hidden") == "\\&.hidden")
        #expect(Roff.paragraph("shown") == "shown")
        #expect(Roff.values("a <b> [c]") == "a <\\fIb\\fR> [c]")
    }
}

/// What a help text shows: each section's row labels, and the usage line.
struct HelpText {
    /// The titles HelpFormatter writes (GitCredentialCommandLine and
    /// TouchstonedCommandLine use the same).
    static let titles = ["OVERVIEW", "USAGE", "ARGUMENTS", "OPTIONS", "SUBCOMMANDS", "ENVIRONMENT", "EXIT CODES"]

    private var rows: [String: [String]] = [:]
    /// The usage line, unwrapped.
    private(set) var usage = ""

    init(_ text: String) {
        var section: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.isEmpty { section = nil; continue }
            if let title = Self.titles.first(where: { line.hasPrefix($0 + ":") }) {
                section = title
                if title == "USAGE" { usage = String(line.dropFirst("USAGE: ".count)) }
                continue
            }
            guard let section else { continue }
            if section == "USAGE" {
                usage += " " + line.drop { $0 == " " }
            } else if line.hasPrefix("  "), let first = line.dropFirst(2).first, first != " " {
                // A row: the label, then two spaces or more before the text.
                let body = line.dropFirst(2)
                let label = body.range(of: "  ").map { String(body[..<$0.lowerBound]) } ?? String(body)
                rows[section, default: []].append(label)
            }
        }
    }

    /// The labels of the rows of section `title`.
    func labels(_ title: String) -> [String] { rows[title] ?? [] }
}

/// A man page as man shows it, roughly: the text lines of each section
/// (`.SH`) and subsection (`.SS`), with the escapes Roff writes undone.
struct ManText {
    private var sections: [(title: String, lines: [String])] = []

    init(roff: String) {
        for line in roff.split(separator: "\n").map(String.init) {
            if line.hasPrefix(".SH ") || line.hasPrefix(".SS ") {
                let title = String(line.dropFirst(4)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                sections.append((Self.plain(title), []))
            } else if !line.hasPrefix("."), !sections.isEmpty {
                sections[sections.count - 1].lines.append(Self.plain(line))
            }
        }
    }

    /// Whether section `title` has a line that is `text`.
    func has(_ text: String, in title: String) -> Bool {
        sections.contains { $0.title == title && $0.lines.contains(text) }
    }

    /// Whether there is a section or subsection `title`.
    func hasSection(_ title: String) -> Bool { sections.contains { $0.title == title } }

    /// The page with every line that is `text`, and every subsection whose
    /// title ends with ` text`, taken out.
    func without(_ text: String) -> ManText {
        var copy = self
        copy.sections = sections.filter { !$0.title.hasSuffix(" " + text) }
            .map { ($0.title, $0.lines.filter { $0 != text }) }
        return copy
    }

    /// `line` without Roff's escapes and font changes.
    static func plain(_ line: String) -> String {
        var text = line
        for (escape, plain) in [("\\fB", ""), ("\\fI", ""), ("\\fR", ""), ("\\&", ""), ("\\-", "-"),
                                ("\\(aq", "'"), ("\\(dq", "\""), ("\\e", "\\")] {
            text = text.replacingOccurrences(of: escape, with: plain)
        }
        return text
    }
}

/// What touchstone(1) lacks of what one command's help shows.
enum Coverage {
    /// The labels (and usage line) of `help`, the help of the command at
    /// `path`, that `page` lacks: its usage line, arguments, own options
    /// and subcommands in the command's subsection (SYNOPSIS for the root),
    /// each subcommand's own subsection, and its global options (those the
    /// root's help lists) in OPTIONS.
    static func missing(help helpText: String, path: [String], rootHelp: String, page: ManText) -> [String] {
        let help = HelpText(helpText)
        let globals = Set(HelpText(rootHelp).labels("OPTIONS"))
        let title = (["touchstone"] + path).joined(separator: " ")
        let home = path.isEmpty ? "SYNOPSIS" : title
        var missing: [String] = []
        if !page.has(help.usage, in: home) { missing.append(help.usage) }
        for label in help.labels("ARGUMENTS") where !page.has(label, in: home) { missing.append(label) }
        for label in help.labels("OPTIONS") where !page.has(label, in: globals.contains(label) ? "OPTIONS" : home) {
            missing.append(label)
        }
        for name in help.labels("SUBCOMMANDS") {
            let entry = path.isEmpty ? page.hasSection(title + " " + name) : page.has(name, in: home)
            if !entry || !page.hasSection(title + " " + name) { missing.append(name) }
        }
        return missing
    }
}
