import Foundation
import Testing
import TestRigs
import TouchstoneSecretService
import TouchstoneSecure

/// Debian's pinentry-tty, drawing on a pseudo-terminal of the test's, where
/// the test reads its prompt and types as a person would.
@Suite("pinentry (pinentry-tty on a pseudo-terminal)")
struct PinentryTests {
    static let program = "/usr/bin/pinentry-tty"

    private func ask(_ terminal: PseudoTerminal, error: String? = nil,
                     description: String = "Open mail / alice\nfor secret-tool (pid 42)") -> Task<Pinentry.Outcome, any Error> {
        let pinentry = Pinentry(program: Self.program, ttyName: terminal.slaveName, environment: ["PATH": "/usr/bin:/bin", "TERM": "dumb"])
        return Task {
            try await pinentry.ask(title: "Touchstone", description: description, error: error)
        }
    }

    @Test("the passcode typed at its prompt comes back byte for byte, % and spaces and UTF-8 among them; the description (two lines) is shown first")
    func typed() async throws {
        let terminal = try PseudoTerminal()
        let asking = ask(terminal)
        #expect(try await terminal.waitForShown("Passcode:"), "\(String(decoding: terminal.echoed, as: UTF8.self))")
        let shown = String(decoding: terminal.echoed, as: UTF8.self)
        #expect(shown.contains("Open mail / alice") && shown.contains("for secret-tool (pid 42)"), "\(shown)")
        let passcode = "100% sûr %25 x"
        // pinentry-tty turns echo off (TCSAFLUSH: typed-ahead input dropped) after its prompt.
        #expect(try await terminal.waitForEchoOff())
        terminal.type(passcode + "\n")
        guard case .passcode(let got) = try await asking.value else {
            Issue.record("no passcode came back")
            return
        }
        #expect(got == SecureBytes(copying: Array(passcode.utf8)))
    }

    @Test("Ctrl-D at the prompt is a cancel, not an empty passcode; an error line is shown when given")
    func cancelled() async throws {
        let terminal = try PseudoTerminal()
        let asking = ask(terminal, error: "Wrong passcode (1 of 10)")
        #expect(try await terminal.waitForShown("Passcode:"))
        #expect(String(decoding: terminal.echoed, as: UTF8.self).contains("Wrong passcode (1 of 10)"))
        #expect(try await terminal.waitForEchoOff())
        terminal.type([0x04])
        guard case .cancelled = try await asking.value else {
            Issue.record("a Ctrl-D was not a cancel")
            return
        }
    }

    @Test("no such program: a clear error")
    func missingProgram() async {
        let pinentry = Pinentry(program: "/nonexistent/pinentry", environment: [:])
        await #expect(throws: Pinentry.Failure.self) {
            try await pinentry.ask(title: "Touchstone", description: "x")
        }
    }
}
