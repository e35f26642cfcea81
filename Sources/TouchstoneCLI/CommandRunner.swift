import Dispatch
import Foundation
import Synchronization
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// Runs one parsed command to its exit status: the command in a task that
/// Ctrl-C and SIGTERM cancel (exit 3, no error text, the reader released),
/// errors reported as the contract says.
///
/// Nonisolated on purpose: nothing here may run on the MainActor, since
/// libfprint calls back on its own thread.
enum CommandRunner {
    static func run(_ command: Command, _ options: GlobalOptions) async -> Int32 {
        let signals = SignalCancellation()  // before anything can wait
        let task = Task.detached { await execute(command, options) }
        signals.onSignal { task.cancel() }
        let code = await task.value
        // A server's normal end is a signal: the Secret Service provider and
        // the ssh-agent end on SIGTERM as their job (exit 0).
        if case .secretService = command, signals.wasSignalled { return code }
        if case .sshAgent = command { return code }
        if case .fido(.serve) = command { return code }
        return signals.wasSignalled ? ExitCode.cancelled.rawValue : code
    }

    /// The command (which closes the device it opened), then the status.
    private static func execute(_ command: Command, _ options: GlobalOptions) async -> Int32 {
        let session = Session(options: options)
        var failure: CLIFailure?
        do {
            try await dispatch(command, session)
        } catch {
            failure = session.translation.failure(for: error)
        }
        guard var failure else { return ExitCode.success.rawValue }
        if Task.isCancelled { failure = .cancelled }
        failure.report()
        return failure.code.rawValue
    }

    private static func dispatch(_ command: Command, _ session: Session) async throws {
        switch command {
        case .status: try await session.status()
        case .passcode(let action): try await session.passcode(action)
        case .enroll(let finger): try await session.enroll(finger)
        case .unenroll(let target): try await session.unenroll(target)
        case .fingers: try await session.fingers()
        case .verify(let allowPasscode): try await session.verify(allowPasscode: allowPasscode)
        case .matching(let touches): try await session.matching(touches: touches)
        case .add(let service, let account, let access, let label, let comment):
            try await session.add(service: service, account: account, access: access, label: label, comment: comment)
        case .get(let service, let account, let reason): try await session.get(service: service, account: account, reason: reason)
        case .update(let service, let account): try await session.update(service: service, account: account)
        case .delete(let service, let account): try await session.delete(service: service, account: account)
        case .list(let service): try await session.list(service: service)
        case .sim(let sim): try await session.simulator(sim)
        case .demo: throw CLIFailure(.failure, "demo runs on its own")
        case .importVault(let remove): try await session.importVault(remove: remove)
        case .importSecretService(let access, let dryRun): try await session.importSecretService(access: access, dryRun: dryRun)
        case .secretService(let replace, let access): try await session.secretService(replace: replace, access: access)
        case .sshKey(let action): try await session.sshKey(action)
        case .sshAgent(let socket): try await session.sshAgent(socket: socket)
        case .fido(let action): try await session.fido(action)
        case .doctor: try await session.doctor()
        }
    }
}

