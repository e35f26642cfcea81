import Glibc
import Synchronization
import Testing
import Touchstone
import TouchstoneServer

/// The daemon's reader turns on their own: who has the reader next, and a
/// waiter that goes away.
@Suite("touchstoned's reader turns")
struct ReaderTurnsTests {
    /// What the turns logged, and the order the test's takers got theirs.
    final class Record: Sendable {
        let lines = Mutex<[String]>([])
        let order = Mutex<[String]>([])
        func log(_ line: String) { lines.withLock { $0.append(line) } }
        func got(_ name: String) { order.withLock { $0.append(name) } }
        func waiting(_ count: Int) -> Bool { lines.withLock { $0.filter { $0.contains("waits its turn") }.count >= count } }
    }

    /// Waits (polling the log, never a fixed sleep) until `count` takers wait.
    private func untilWaiting(_ record: Record, _ count: Int) async {
        while !record.waiting(count) { await Task.yield() }
    }

    @Test("a free reader is taken at once; a second user's request waits until the first ends its turn, then has it (the log says who waits for whom)")
    func waitsForTheHolder() async throws {
        let record = Record()
        let turns = ReaderTurns(log: record.log)
        let first = try await turns.take(for: 1000)
        let second = Task {
            let turn = try await turns.take(for: 1001)
            record.got("1001")
            return turn
        }
        await untilWaiting(record, 1)
        #expect(record.order.withLock { $0 }.isEmpty, "the second got the reader while the first had it")
        #expect(record.lines.withLock { $0 } == ["uid 1001 waits its turn for the reader (uid 1000 has it)"])
        first.end()
        let turn = try await second.value
        #expect(record.order.withLock { $0 } == ["1001"])
        turn.end()
        // Free again: taken at once.
        try await turns.take(for: 1000).end()
    }

    @Test("turns go round the users who wait: user A's three queued requests do not all come before user B's one")
    func roundRobin() async throws {
        let record = Record()
        let turns = ReaderTurns(log: record.log)
        let holder = try await turns.take(for: 1)
        var tasks: [Task<Void, any Error>] = []
        for (index, uid) in [(0, uid_t(2)), (1, 2), (2, 2), (3, 3)] {
            tasks.append(Task {
                let turn = try await turns.take(for: uid)
                record.got("\(uid)")
                turn.end()
            })
            // Queued in this order.
            await untilWaiting(record, index + 1)
        }
        holder.end()
        for task in tasks { try await task.value }
        #expect(record.order.withLock { $0 } == ["2", "3", "2", "2"])
    }

    @Test("a waiter whose call is cancelled leaves the queue (CancellationError) and the next one has the reader; the turn of a request that ends passes once, however often end is called")
    func cancelledWaiter() async throws {
        let record = Record()
        let turns = ReaderTurns(log: record.log)
        let holder = try await turns.take(for: 1)
        let gone = Task { _ = try await turns.take(for: 2) }
        await untilWaiting(record, 1)
        let next = Task {
            let turn = try await turns.take(for: 3)
            record.got("3")
            return turn
        }
        await untilWaiting(record, 2)
        gone.cancel()
        await #expect(throws: CancellationError.self) { try await gone.value }
        holder.end()
        holder.end()
        let turn = try await next.value
        #expect(record.order.withLock { $0 } == ["3"])
        // Held by 3: another waits again (a second end of 1's turn gave nothing away).
        let after = Task { try await turns.take(for: 4) }
        await untilWaiting(record, 3)
        turn.end()
        try await after.value.end()
    }
}
