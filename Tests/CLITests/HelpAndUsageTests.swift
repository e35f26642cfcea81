import Testing
import TestRigs

/// Help on stdout with exit 0; usage errors on stderr with the usage line
/// and exit 64 (no simulator needed).
@Suite("touchstone: help and usage errors (subprocess)")
struct HelpAndUsageTests {
    @Test("--help, help <command> and --version print to stdout and exit 0")
    func help() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let top = sandbox.run(["--help"])
            #expect(top.code == 0)
            for section in ["OVERVIEW:", "USAGE:", "OPTIONS:", "SUBCOMMANDS:"] { #expect(top.stdoutText.contains(section)) }
            #expect(top.stderr.isEmpty)
            let touch = sandbox.run(["help", "sim", "touch"])
            #expect(touch.code == 0)
            #expect(touch.stdoutText.contains("--count"))
            #expect(touch.stdoutText == sandbox.run(["sim", "touch", "--help"]).stdoutText)
            let version = sandbox.run(["--version"])
            #expect(version.code == 0)
            #expect(version.stdoutText.hasPrefix("touchstone "))
        }
    }

    @Test("usage errors: one error line, the usage line, exit 64, nothing on stdout",
          arguments: [["frobnicate"], ["add", "only-service"], ["get"], ["--timeout", "soon", "status"],
                      ["add", "s", "a", "--access", "biometry-any&biometry-current-set"], ["passcode", "remove"],
                      ["update", "s", "a", "--passcode-fd", "0"], []])
    func usageErrors(_ arguments: [String]) async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let result = sandbox.run(arguments)
            #expect(result.code == 64)
            #expect(result.stdout.isEmpty)
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.first?.hasPrefix("touchstone: error: ") == true)
            #expect(lines.contains { $0.hasPrefix("usage: touchstone") })
        }
    }
}
