import Foundation
import Touchstone

/// The CLI's side of an authentication: prompts on stderr, Enter on the
/// terminal to use the passcode, passcodes from `PasscodeSource`.
///
/// Nonisolated on purpose: libfprint reports scan events on its own thread,
/// which must never land in MainActor code.
final class TerminalInteraction: AuthenticationInteraction {
    let passcodes: PasscodeSource

    init(passcodes: PasscodeSource) { self.passcodes = passcodes }

    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        // With --passcode-fd, an operation that accepts the passcode uses it
        // without waiting for a touch.
        if passcodeAllowed && passcodes.fd != nil { return }
        let tty = passcodeAllowed ? Terminal.open() : nil
        defer { if let tty { close(tty) } }
        Output.progress(reason)
        Output.progress(tty != nil ? "touch the reader (Enter: use passcode, Ctrl-C: cancel)"
                                   : "touch the reader (Ctrl-C: cancel)")
        if let tty {
            switch await LineReader.readLine(from: tty) {
            case .line: return  // Enter: the person asks for the passcode
            case .endOfInput, .cancelled, .failed: break
            }
        }
        // Wait for the touch (or a cancel).
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    func scanEvent(_ event: ScanEvent) {
        switch event {
        case .retry(let hint): Output.progress("  \(hint.message)")
        case .stage(let completed, let total): Output.progress("Touch \(completed) of \(total)")
        }
    }

    func passcode(reason: String) async throws -> SecureBytes {
        try await passcodes.next(prompt: "Passcode: ")
    }
}
