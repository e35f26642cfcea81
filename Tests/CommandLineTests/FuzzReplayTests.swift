import Testing
import TestRigs
@testable import TouchstoneCommandLine

/// The `CommandLine` fuzz target's committed inputs (fuzz/seeds/CommandLine,
/// fuzz/crashes/CommandLine) replayed through the function the fuzzer calls.
@Suite("Fuzz inputs replayed: CommandLine")
struct CommandLineFuzzReplayTests {
    @Test("every seed and every input that once crashed the fuzzer: no trap, no broken promise")
    func replay() throws {
        let inputs = try FuzzInputs.inputs("CommandLine")
        #expect(inputs.contains { $0.isSeed }, "no seeds in \(FuzzInputs.folder.path)/seeds/CommandLine")
        for input in inputs {
            #expect(CommandLineParser.fuzzCheck(input.bytes) == nil, "\(input)")
        }
    }

    @Test("the promise check catches what it is there for")
    func promiseCheckBites() {
        #expect(CommandLineParser.brokenPromise(.usageError(message: "", usage: "touchstone x")) != nil)
        #expect(CommandLineParser.brokenPromise(.usageError(message: "bad \u{202E}", usage: "touchstone x")) != nil)
        #expect(CommandLineParser.brokenPromise(.usageError(message: "two\nlines", usage: "touchstone x")) != nil)
        #expect(CommandLineParser.brokenPromise(.usageError(message: "fine", usage: "touchstone x")) == nil)
    }
}
