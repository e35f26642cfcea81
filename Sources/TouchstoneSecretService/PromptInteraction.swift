import Foundation
import Touchstone
import TouchstoneDBus
import TouchstoneSecure

/// How the provider reaches the person during a prompt: a desktop
/// notification (org.freedesktop.Notifications) that says which program
/// asks for which item and what to touch, and pinentry for a passcode.
package struct Prompter: Sendable {
    /// The dialog that asks for passcodes; nil: none (touch only).
    package var pinentry: Pinentry?
    /// Said to the log (never a secret).
    package var log: @Sendable (String) -> Void

    package init(pinentry: Pinentry?, log: @escaping @Sendable (String) -> Void) {
        self.pinentry = pinentry
        self.log = log
    }

    /// The pinentry a provider uses: TOUCHSTONE_PINENTRY, else `pinentry`
    /// on PATH; nil when there is none.
    package static func pinentry(environment: [String: String]) -> Pinentry? {
        let named = environment["TOUCHSTONE_PINENTRY"].flatMap { $0.isEmpty ? nil : $0 }
        let candidates = named.map { [$0] } ?? (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":").map { "\($0)/pinentry" }
        guard let program = candidates.first(where: { access($0, X_OK) == 0 }) else { return nil }
        return Pinentry(program: program, ttyName: nil, environment: environment)
    }
}

/// One prompt's interaction: while a touch is awaited, the notification
/// and pinentry say `summary` (the program and every item the prompt
/// unlocks, `PromptWording.items`); where the access allows the passcode,
/// pinentry asks for it at the same time (typing it is the person's way of
/// asking for the passcode instead; a touch that comes first closes the
/// dialog).
final class PromptInteraction: AuthenticationInteraction {
    private let prompter: Prompter
    private let notifier: DesktopNotifications
    let summary: String
    /// A passcode typed while the touch was awaited, for `passcode`.
    private let typed = Locked<SecureBytes?>(nil)

    init(prompter: Prompter, notifier: DesktopNotifications, summary: String) {
        self.prompter = prompter
        self.notifier = notifier
        self.summary = summary
    }

    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        let withPasscode = passcodeAllowed && prompter.pinentry != nil
        let id = await notifier.show(summary: summary,
                                     body: "Touch the fingerprint reader" + (withPasscode ? ", or type the passcode in the dialog." : "."))
        defer { Task { [notifier] in await notifier.close(id) } }
        prompter.log("\(summary): waiting for a touch")
        if withPasscode, let pinentry = prompter.pinentry {
            if case .passcode(let passcode)? = try? await pinentry.ask(title: "Touchstone", description: summary + ".\nTouch the fingerprint reader, or type the passcode.") {
                typed.withLock { $0 = passcode }
                return
            }
        }
        // Only a touch (or the end of the prompt) ends this.
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes {
        if let passcode = typed.withLock({ state -> SecureBytes? in defer { state = nil }; return state }) { return passcode }
        guard let pinentry = prompter.pinentry else { throw .notInteractive }
        let id = await notifier.show(summary: summary, body: "Type the passcode in the dialog.")
        defer { Task { [notifier] in await notifier.close(id) } }
        do {
            switch try await pinentry.ask(title: "Touchstone", description: summary + ".\nType the passcode.") {
            case .passcode(let passcode): return passcode
            case .cancelled: throw AuthenticationError.userCancel
            }
        } catch let error as AuthenticationError {
            throw error
        } catch {
            throw .interactionFailed("pinentry: \(error)")
        }
    }
}
