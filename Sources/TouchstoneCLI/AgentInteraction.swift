import Foundation
import Touchstone
import TouchstoneSecretService

/// How the agent asks for a touch or the passcode: through the terminal
/// when it has one (Enter for the passcode, typed without echo), else a
/// touch is awaited and the passcode, where the key allows it and no touch
/// can do, comes through pinentry (as gpg-agent and ssh-tpm-agent ask).
final class AgentInteraction: AuthenticationInteraction {
    let terminal: TerminalInteraction

    init(terminal: TerminalInteraction) { self.terminal = terminal }

    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        if terminal.canAskPasscode {
            await terminal.waitForPasscodeRequest(reason: reason, passcodeAllowed: passcodeAllowed)
            return
        }
        AgentSigner.log("touch the reader (\(reason))")
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }

    func scanEvent(_ event: ScanEvent) async {
        await terminal.scanEvent(event)
    }

    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes {
        if terminal.canAskPasscode { return try await terminal.passcode(reason: reason) }
        // TOUCHSTONE_PINENTRY, else pinentry on PATH, as the Secret Service provider finds it.
        guard let pinentry = Prompter.pinentry(environment: ProcessInfo.processInfo.environment) else {
            AgentSigner.log("no pinentry to ask the passcode with (install one, or set TOUCHSTONE_PINENTRY)")
            throw .notInteractive
        }
        do {
            switch try await pinentry.ask(title: "Touchstone ssh-agent", description: reason) {
            case .passcode(let passcode): return passcode
            case .cancelled: throw AuthenticationError.userCancel
            }
        } catch let failure as Pinentry.Failure {
            AgentSigner.log("pinentry: \(failure)")
            throw .notInteractive
        } catch {
            throw .userCancel
        }
    }
}
