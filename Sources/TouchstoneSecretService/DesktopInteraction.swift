import Foundation
import Touchstone

/// How a program without a window of its own asks for a touch or the
/// passcode (the ssh-agent, the security-key provider): through the
/// terminal when it has one (Enter for the passcode, typed without echo),
/// else a touch is awaited and the passcode, where the access allows it
/// and no touch can do, comes through pinentry (as gpg-agent and
/// ssh-tpm-agent ask).
package final class DesktopInteraction: AuthenticationInteraction {
    package let terminal: TerminalInteraction
    /// pinentry's title.
    let title: String
    /// Said to the log (never a secret).
    let log: @Sendable (String) -> Void

    package init(terminal: TerminalInteraction, title: String, log: @escaping @Sendable (String) -> Void) {
        self.terminal = terminal
        self.title = title
        self.log = log
    }

    package func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        if terminal.canAskPasscode {
            await terminal.waitForPasscodeRequest(reason: reason, passcodeAllowed: passcodeAllowed)
            return
        }
        log("touch the reader (\(reason))")
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    package func scanEvent(_ event: ScanEvent) async {
        await terminal.scanEvent(event)
    }

    package func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes {
        if terminal.canAskPasscode { return try await terminal.passcode(reason: reason) }
        // TOUCHSTONE_PINENTRY, else pinentry on PATH, as the Secret Service provider finds it.
        guard let pinentry = Prompter.pinentry(environment: ProcessInfo.processInfo.environment) else {
            log("no pinentry to ask the passcode with (install one, or set TOUCHSTONE_PINENTRY)")
            throw .notInteractive
        }
        do {
            switch try await pinentry.ask(title: title, description: reason) {
            case .passcode(let passcode): return passcode
            case .cancelled: throw AuthenticationError.userCancel
            }
        } catch let failure as Pinentry.Failure {
            log("pinentry: \(failure)")
            throw .notInteractive
        } catch {
            throw .userCancel
        }
    }
}
