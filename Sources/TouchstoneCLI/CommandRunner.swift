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
    /// How long a cancelled command may take to wind down before the
    /// process exits anyway (a second signal exits at once).
    static let gracePeriod: DispatchTimeInterval = .seconds(5)

    static func run(_ command: Command, _ options: GlobalOptions) async -> Int32 {
        let signals = SignalCancellation()  // before anything can wait
        let task = Task.detached { await execute(command, options) }
        signals.onSignal { task.cancel() }
        let code = await task.value
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
        case .add(let service, let account, let access, let label, let comment):
            try await session.add(service: service, account: account, access: access, label: label, comment: comment)
        case .get(let service, let account, let reason): try await session.get(service: service, account: account, reason: reason)
        case .update(let service, let account): try await session.update(service: service, account: account)
        case .delete(let service, let account): try await session.delete(service: service, account: account)
        case .list(let service): try await session.list(service: service)
        case .sim(let sim): try await session.simulator(sim)
        case .demo: throw CLIFailure(.failure, "demo runs on its own")
        case .importVault(let remove): try await session.importVault(remove: remove)
        }
    }
}

/// SIGINT and SIGTERM turned into task cancellation. The default handlers
/// are ignored first, then Dispatch sources watch both signals. A command
/// that does not wind down within the grace period, or a second signal,
/// exits 3 at once (the terminal's echo restored): SQLite's transactions
/// keep the state whole either way.
final class SignalCancellation: Sendable {
    private struct State {
        var signalled = false
        var cancel: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())
    /// Kept only to keep the sources alive; never changed after init.
    nonisolated(unsafe) private let sources: [any DispatchSourceSignal]

    init() {
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            return DispatchSource.makeSignalSource(signal: number, queue: .global())
        }
        for source in sources {
            source.setEventHandler { [self] in received() }
            source.resume()
        }
    }

    /// What a signal does: `cancel` runs on the first signal, or at once if
    /// one already came.
    func onSignal(_ cancel: @escaping @Sendable () -> Void) {
        let already = state.withLock { state -> Bool in
            state.cancel = cancel
            return state.signalled
        }
        if already { cancel() }
    }

    var wasSignalled: Bool { state.withLock { $0.signalled } }

    private func received() {
        let (again, cancel) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            defer { state.signalled = true }
            return (state.signalled, state.cancel)
        }
        if again { Self.exitNow() }
        cancel?()
        DispatchQueue.global().asyncAfter(deadline: .now() + CommandRunner.gracePeriod) { Self.exitNow() }
    }

    private static func exitNow() {
        TerminalInteraction.restoreTerminal()
        exit(ExitCode.cancelled.rawValue)
    }
}
