import Dispatch
import FoundationEssentials
import Glibc
import TouchstoneClient
import TouchstoneCommandLine

/// SIGINT and SIGTERM turned into task cancellation. The default handlers
/// are ignored first, then Dispatch sources watch both signals. A command
/// that does not wind down within the grace period, or a second signal,
/// exits 3 at once (the terminal's echo restored): SQLite's transactions
/// keep the state whole either way.
package final class SignalCancellation: Sendable {
    /// How long a cancelled command may take to wind down before the
    /// process exits anyway (a second signal exits at once).
    package static let gracePeriod: DispatchTimeInterval = .seconds(5)

    private struct State {
        var signalled = false
        var cancel: (@Sendable () -> Void)?
    }

    private let state = Locked(State())
    /// Kept only to keep the sources alive; never changed after init.
    nonisolated(unsafe) private let sources: [any DispatchSourceSignal]

    package init() {
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
    package func onSignal(_ cancel: @escaping @Sendable () -> Void) {
        let already = state.withLock { state -> Bool in
            state.cancel = cancel
            return state.signalled
        }
        if already { cancel() }
    }

    package var wasSignalled: Bool { state.withLock { $0.signalled } }

    private func received() {
        let (again, cancel) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            defer { state.signalled = true }
            return (state.signalled, state.cancel)
        }
        if again { Self.exitNow() }
        cancel?()
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.gracePeriod) { Self.exitNow() }
    }

    private static func exitNow() {
        TerminalInteraction.restoreTerminal()
        exit(ExitCode.cancelled.rawValue)
    }
}
