import Synchronization
import Touchstone
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's reader is every user's, and one request uses it at a time:
/// a request that needs it waits its turn instead of failing busy. Turns go
/// round the users who wait (each user's own requests in the order they
/// came), so one user's many requests never starve another's; a turn ends
/// when the operation releases the reader, and no operation holds it longer
/// than the daemon's touch caps (`GrantPolicy`). A waiter whose task is
/// cancelled (its client went) leaves the queue.
package final class ReaderTurns: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        /// The uid whose request has the reader, if any.
        var holder: uid_t?
        /// Each waiting uid's requests, in order; uids in the order their
        /// turn comes.
        var queue: [(uid: uid_t, waiters: [Waiter])] = []
        var nextID: UInt64 = 1
    }

    private let state = Mutex(State())
    private let log: DaemonLog

    init(log: DaemonLog) { self.log = log }

    /// `log`: where the daemon's log lines go (a waiter's).
    package convenience init(log: @escaping @Sendable (String) -> Void) { self.init(log: DaemonLog(write: log)) }

    /// Waits until the reader is `uid`'s request's; the returned turn ends
    /// it. Throws `CancellationError` when the task is cancelled first.
    package func take(for uid: uid_t) async throws(CancellationError) -> ReaderTurn {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextID += 1 }
            return state.nextID
        }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    enum Arrival { case granted, cancelled, queued(behind: uid_t?) }
                    let arrival = state.withLock { state -> Arrival in
                        // Checked under the lock `leave` takes: a cancel
                        // either comes first (seen here) or finds the waiter.
                        if Task.isCancelled { return .cancelled }
                        if state.holder == nil, state.queue.isEmpty {
                            state.holder = uid
                            return .granted
                        }
                        let waiter = Waiter(id: id, continuation: continuation)
                        if let index = state.queue.firstIndex(where: { $0.uid == uid }) {
                            state.queue[index].waiters.append(waiter)
                        } else {
                            state.queue.append((uid, [waiter]))
                        }
                        return .queued(behind: state.holder)
                    }
                    switch arrival {
                    case .granted: continuation.resume()
                    case .cancelled: continuation.resume(throwing: CancellationError())
                    case .queued(let holder):
                        log.write("uid \(uid) waits its turn for the reader" + (holder.map { " (uid \($0) has it)" } ?? ""))
                    }
                }
            } onCancel: {
                leave(id)
            }
        } catch {
            throw CancellationError()
        }
        return ReaderTurn { self.pass(from: uid) }
    }

    /// A cancelled waiter leaves the queue (its continuation fails).
    private func leave(_ id: UInt64) {
        let removed = state.withLock { state -> Waiter? in
            for index in state.queue.indices {
                guard let position = state.queue[index].waiters.firstIndex(where: { $0.id == id }) else { continue }
                let waiter = state.queue[index].waiters.remove(at: position)
                if state.queue[index].waiters.isEmpty { state.queue.remove(at: index) }
                return waiter
            }
            return nil
        }
        removed?.continuation.resume(throwing: CancellationError())
    }

    /// The holder's turn ends: the next uid in the round has it, and that
    /// uid goes to the back of the round if it has more waiting.
    private func pass(from uid: uid_t) {
        let next = state.withLock { state -> Waiter? in
            guard state.holder == uid else { return nil }
            state.holder = nil
            guard !state.queue.isEmpty else { return nil }
            var first = state.queue.removeFirst()
            let waiter = first.waiters.removeFirst()
            state.holder = first.uid
            if !first.waiters.isEmpty { state.queue.append(first) }
            return waiter
        }
        next?.continuation.resume()
    }
}
