import Foundation
import Testing

/// The POSIX layer is the only place that speaks errno and close(2)
/// directly: everywhere else an error is an `Errno` (its description is
/// strerror's), a retry on EINTR is `valueOrErrno(retryOnInterrupt:)`, and
/// a descriptor is closed by its `OwnedDescriptor`, and the environment is
/// changed through `ProcessEnvironment`. Read from the sources,
/// so that a new file cannot bring the old ways back unnoticed.
@Suite("Source rules of the POSIX layer")
struct SourceRulesTests {
    /// Sources/, found from this file (Tests/POSIXTests/...).
    static let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources").path

    /// What no file outside TouchstonePOSIX may contain, with what to use instead.
    static let rules: [(pattern: String, instead: String)] = [
        (#"strerror\("#, "Errno's description"),
        (#"==\s*EINTR|EINTR\s*=="#, "valueOrErrno(retryOnInterrupt: true)"),
        (#"(^|[^.\w])close\(\s*[A-Za-z_]\w*\s*\)"#, "an OwnedDescriptor"),
        (#"(^|[^.\w])(setenv|putenv)\("#, "ProcessEnvironment.set (a spawn reading environ meanwhile fails)"),
    ]

    /// Every offending line as "path:line: text".
    static func offences(in text: String, path: String) throws -> [String] {
        var found: [String] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code.hasPrefix("//") { continue }
            for rule in rules where code.range(of: rule.pattern, options: .regularExpression) != nil {
                found.append("\(path):\(number + 1): \(code) (use \(rule.instead))")
            }
        }
        return found
    }

    @Test("the rules catch what they are for: strerror, an EINTR comparison, a bare close (and not a method named close), setenv (and not unsetenv)")
    func rulesCatch() throws {
        #expect(try Self.offences(in: "let why = String(cString: strerror(errno))", path: "x").count == 1)
        #expect(try Self.offences(in: "if count < 0, errno == EINTR { continue }", path: "x").count == 1)
        #expect(try Self.offences(in: "defer { close(fd) }", path: "x").count == 1)
        #expect(try Self.offences(in: "try connection.close()\nawait opened.close()\nsqlite3_close(handle)", path: "x").isEmpty)
        #expect(try Self.offences(in: "// close(fd) was here", path: "x").isEmpty)
        #expect(try Self.offences(in: "setenv(\"A\", \"b\", 1)", path: "x").count == 1)
        #expect(try Self.offences(in: "unsetenv(\"LISTEN_PID\")\nProcessEnvironment.set(\"A\", \"b\")", path: "x").isEmpty)
    }

    @Test("no Swift file outside TouchstonePOSIX calls strerror, compares with EINTR, closes a raw descriptor or calls setenv")
    func sourcesFollowThem() throws {
        let files = try #require(FileManager.default.enumerator(atPath: Self.sources)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".swift") && !$0.hasPrefix("TouchstonePOSIX/") }
        #expect(files.count > 100, "the sources were found at \(Self.sources)")
        var found: [String] = []
        for file in files {
            found += try Self.offences(in: String(contentsOfFile: Self.sources + "/" + file, encoding: .utf8), path: file)
        }
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
