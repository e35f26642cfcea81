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
        try await withSessionBus(hint: "run it in a desktop session, or with DBUS_SESSION_BUS_ADDRESS set") { bus in
            try await serve(on: bus, replace: replace, access: access)
        }
    }

    /// Runs `body` with a connection to the session bus, closed last
    /// whatever happens (its subscriptions and objects released before the
    /// process ends). No bus: a failure with `hint`.
    private func withSessionBus(hint: String, _ body: (DBusBus) async throws -> Void) async throws {
        let bus: DBusBus
        do {
            bus = try await DBusBus()
        } catch {
            throw CLIFailure(.failure, "cannot connect to the session bus: \(error)", hint: hint)
        }
        do {
            try await body(bus)
        } catch {
            await bus.close()
            throw error
        }
        await bus.close()
    }

    private func serve(on bus: DBusBus, replace: Bool, access: AccessControl) async throws {
        // An embedded engine on the bus's thread: a call that reads the
        // vault is answered where GDBus delivered it (docs/performance.md).
        try await withDevice(engineOn: bus.thread) { device in
            let prompter = Prompter(pinentry: Prompter.pinentry(environment: ProcessInfo.processInfo.environment),
                                    log: { Output.progress("touchstone secret-service: " + $0) })
            let provider = try await SecretServiceProvider(bus: bus, device: device, access: access, prompter: prompter)
            let (ended, end) = AsyncStream<String>.makeStream()
            switch try await provider.start(replace: replace, lost: { end.yield("another provider took org.freedesktop.secrets over") }) {
            case .taken(let owner):
                await provider.stop()
                guard replace else {
                    throw CLIFailure(.failure, "org.freedesktop.secrets is owned by \(owner)",
                                     hint: "stop it, or take the name over with --replace")
                }
                throw CLIFailure(.failure, "org.freedesktop.secrets is owned by \(owner), which does not let its name be taken over",
                                 hint: "stop it first (gnome-keyring: end gnome-keyring-daemon, or keep it from starting with scripts/install-secret-service --replace-gnome-keyring)")
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

extension Session {
    /// `import --from-secret-service [--access SPEC] [--dry-run]`: every
    /// item of the Secret Service on the session bus into this vault
    /// (`SecretServiceImport`). Exit 0 only when no item failed.
    func importSecretService(access: AccessControl, dryRun: Bool) async throws {
        try await withSessionBus(hint: "run it in the desktop session whose keyring you move from, or with DBUS_SESSION_BUS_ADDRESS set") { bus in
            try await importing(on: bus, access: access, dryRun: dryRun)
        }
    }

    private func importing(on bus: DBusBus, access: AccessControl, dryRun: Bool) async throws {
        let source: SecretServiceSource
        do {
            source = try await SecretServiceSource(bus: bus)
        } catch {
            throw CLIFailure(.failure, error.description)
        }
        Output.progress("importing from \(source.ownerProgram ?? source.owner)" + (source.isEncrypted ? "" : " (a plain session: it offers no encrypted one)")
                        + (dryRun ? "; a dry run: nothing is added" : ""))
        let outcome = try await withDevice { device in
            let run = SecretServiceImport(source: source, device: device, access: access, dryRun: dryRun,
                                          unlockTimeout: .seconds(max(options.timeout.components.seconds, 300)),
                                          comparingWith: makeContext(device), log: { Output.progress($0) })
            do {
                return try await run.run()
            } catch {
                throw CLIFailure(.failure, "the import stopped: \(error)", hint: "nothing already added was lost; run it again to go on")
            }
        }
        if options.json {
            try Output.json(outcome)
        } else {
            for entry in outcome.skipped { Output.result("skipped: " + SafeText.escaped("\(entry.collection) / \(entry.label): \(entry.why)")) }
            for entry in outcome.failed { Output.result("failed: " + SafeText.escaped("\(entry.collection) / \(entry.label): \(entry.why)")) }
            for made in outcome.collectionsMade { Output.result("collection made: " + SafeText.escaped(made)) }
            if let alias = outcome.defaultAlias { Output.result("the alias default now names " + SafeText.escaped(alias) + ", as in the source") }
            Output.result("found \(outcome.found), \(dryRun ? "would add" : "added") \(outcome.added), skipped \(outcome.skipped.count), failed \(outcome.failed.count)")
        }
        if !outcome.failed.isEmpty {
            throw CLIFailure(.failure, "\(outcome.failed.count) item\(outcome.failed.count == 1 ? "" : "s") could not be imported (listed above)")
        }
    }
}
