import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneDBus
import TouchstoneSecretService

extension Session {
    /// `secret-service [--replace] [--access SPEC]`: the Secret Service
    /// provider on the session bus until SIGTERM or SIGINT (exit 0), or
    /// until another provider takes the name over.
    func secretService(replace: Bool, access: AccessControl) async throws {
        let bus: DBusBus
        do {
            bus = try await DBusBus()
        } catch {
            throw CLIFailure(.failure, "cannot connect to the session bus: \(error)",
                             hint: "run it in a desktop session, or with DBUS_SESSION_BUS_ADDRESS set")
        }
        // The bus is closed last, whatever happens: its subscriptions and
        // objects released before the process ends.
        do {
            try await serve(on: bus, replace: replace, access: access)
        } catch {
            await bus.close()
            throw error
        }
        await bus.close()
    }

    private func serve(on bus: DBusBus, replace: Bool, access: AccessControl) async throws {
        try await withDevice { device in
            let prompter = Prompter(pinentry: Prompter.pinentry(environment: ProcessInfo.processInfo.environment),
                                    log: { Output.progress("touchstone secret-service: " + $0) })
            let provider = try await SecretServiceProvider(bus: bus, device: device, access: access, prompter: prompter)
            let (ended, end) = AsyncStream<String>.makeStream()
            switch try await provider.start(replace: replace, lost: { end.yield("another provider took org.freedesktop.secrets over") }) {
            case .taken(let owner):
                await provider.stop()
                throw CLIFailure(.failure, "org.freedesktop.secrets is owned by \(owner)",
                                 hint: "stop it, or take the name over with --replace")
            case .serving:
                prompter.log("serving org.freedesktop.secrets (items that clients create: access \(access))")
            }
            let why = await withTaskCancellationHandler {
                await ended.first { _ in true }
            } onCancel: {
                end.finish()
            }
            await provider.stop()
            prompter.log(why ?? "stopped")
        }
    }
}
