import Testing
import TouchstoneCommandLine

@Suite("Exit codes")
struct ExitCodeTests {
    @Test("the contract's numbers")
    func numbers() {
        let expected: [(ExitCode, Int32)] = [
            (.success, 0), (.failure, 1), (.authFailed, 2), (.cancelled, 3), (.noReader, 4), (.notEnrolled, 5),
            (.biometryLockout, 6), (.passcodeNotSet, 7), (.itemNotFound, 8), (.duplicateItem, 9),
            (.itemInvalidated, 10), (.tpmFailed, 11), (.tpmLockout, 12), (.corrupted, 13), (.notInteractive, 14),
            (.usage, 64),
        ]
        #expect(ExitCode.allCases.count == expected.count)
        for (code, number) in expected {
            #expect(code.rawValue == number)
        }
    }

    @Test("each parse result's exit code")
    func resultCodes() {
        #expect(parse(["--help"]).exitCode == .success)
        #expect(parse(["--version"]).exitCode == .success)
        #expect(parse(["frob"]).exitCode == .usage)
        #expect(parse(["status"]).exitCode == nil)
    }

    @Test("--version gives the version line, wherever it stands")
    func version() {
        #expect(parse(["--version"]) == .version("touchstone \(CommandLineParser.version)"))
        #expect(parse(["status", "--version"]) == .version("touchstone \(CommandLineParser.version)"))
        #expect(parse(["frob", "--version"]) == .version("touchstone \(CommandLineParser.version)"))
    }
}
