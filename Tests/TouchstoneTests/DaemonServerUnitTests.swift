import Foundation
import Glibc
import Synchronization
import TestRigs
import Testing
import Touchstone
import TouchstoneClient
import TouchstonePOSIX
import TouchstoneSecure
import TouchstoneServer
import TouchstoneVault

/// touchstoned's parts on their own: the passcode gate with a clock of the
/// test's, and a session served over a socketpair (no TPM, no reader:
/// what the session does before and around the engine).
@Suite("touchstoned's server, unit by unit")
struct DaemonServerUnitTests {
    /// A clock the test moves.
    final class TestClock: Sendable {
        private let seconds = Mutex<Double>(1_000_000)
        func now() -> Double { seconds.withLock { $0 } }
        func advance(_ by: Double) { seconds.withLock { $0 += by } }
    }

    @Test("the gate: ten wrong passcodes are free, the eleventh attempt waits the first wait, each wrong one after doubles it up to the longest; a right one clears the count; the verifier knows the right passcode and no other; forget drops both; the count survives a new gate on the same database")
    func passcodeGate() throws {
        let folder = try makeTemporaryDirectory("tsgate")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clock = TestClock()
        let database = try SQLiteDatabase(path: folder + "/daemon.sqlite")
        let gate = try PasscodeGate(database: database, now: { clock.now() })
        let right = SecureBytes(copying: Array("right-passcode".utf8))
        let wrong = SecureBytes(copying: Array("wrong-passcode".utf8))
        #expect(gate.verify(7, right) == nil, "no verifier before the first right passcode")
        gate.recordSuccess(7, right)
        #expect(gate.verify(7, right) == true)
        #expect(gate.verify(7, wrong) == false)
        #expect(gate.verify(8, right) == nil, "another uid has none")

        for n in 1...PasscodeGate.freeTries {
            #expect(try gate.check(7) == n - 1)
            let wait = try gate.recordFailure(7)
            #expect((wait != nil) == (n == PasscodeGate.freeTries), "try \(n) waits \(String(describing: wait))")
        }
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: UInt32(PasscodeGate.firstWait))) { try gate.check(7) }
        #expect(try gate.check(8) == 0, "another uid is not held")
        clock.advance(PasscodeGate.firstWait - 1)
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: 1)) { try gate.check(7) }
        clock.advance(1)
        #expect(try gate.check(7) == PasscodeGate.freeTries, "the wait is over; the count stays")
        #expect(try gate.recordFailure(7) == PasscodeGate.firstWait * 2, "one more wrong doubles it")

        // A new gate on the same database: the count and the wait stayed.
        let again = try PasscodeGate(database: database, now: { clock.now() })
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: UInt32(PasscodeGate.firstWait * 2))) { try again.check(7) }
        #expect(again.verify(7, right) == true, "the pepper is the database's")
        for _ in 0..<30 { _ = try again.recordFailure(7) }
        #expect(try again.recordFailure(7) == PasscodeGate.longestWait, "the wait stops growing at the longest")

        again.recordSuccess(7, right)
        #expect(try again.check(7) == 0, "a right passcode clears the count and the wait")
        again.forget(7)
        #expect(again.verify(7, right) == nil, "forget drops the verifier")
    }

    /// `count` attempts of `uid`'s with `passcode`, all at once from
    /// threads of their own; how the gate answered each.
    private func parallelAttempts(_ gate: PasscodeGate, _ uid: UInt32, _ passcode: SecureBytes,
                                  count: Int) -> [Result<PasscodeAdmission, AuthenticationError>] {
        final class Collected: Sendable {
            let results = Mutex<[Result<PasscodeAdmission, AuthenticationError>]>([])
        }
        let collected = Collected()
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for _ in 0..<count {
            done.enter()
            Thread.detachNewThread {
                start.wait()
                let result = Result { () throws(AuthenticationError) in try gate.admit(uid, passcode) }
                collected.results.withLock { $0.append(result) }
                done.leave()
            }
        }
        for _ in 0..<count { start.signal() }
        done.wait()
        return collected.results.withLock { $0 }
    }

    @Test("the gate, one step per attempt: 32 parallel wrong passcodes (verifier known) are judged exactly ten times, the rest throttled; 32 parallel ones the verifier cannot tell (the TPM decides) are let through at most ten times, each counted before it is let through; a refund gives an unjudged one back, a success clears; the right passcode is admitted before and after the wait")
    func passcodeGateParallel() throws {
        let folder = try makeTemporaryDirectory("tsgatepar")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clock = TestClock()
        let gate = try PasscodeGate(database: try SQLiteDatabase(path: folder + "/daemon.sqlite"), now: { clock.now() })
        let right = SecureBytes(copying: Array("right-passcode".utf8))
        let wrong = SecureBytes(copying: Array("wrong-passcode".utf8))
        gate.recordSuccess(7, right)
        #expect(try gate.admit(7, right) == .right(clearing: false), "the right passcode is admitted")

        let judged = parallelAttempts(gate, 7, wrong, count: 32)
        let wrongs = judged.filter { (try? $0.get()) == .wrong }.count
        let throttled = judged.filter {
            if case .failure(.passcodeThrottled) = $0 { return true } else { return false }
        }.count
        #expect(wrongs == PasscodeGate.freeTries, "judged \(wrongs) times: \(judged)")
        #expect(wrongs + throttled == 32, "\(judged)")
        #expect(gate.failures(7) == PasscodeGate.freeTries, "every judged one was counted")
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: UInt32(PasscodeGate.firstWait))) {
            try gate.admit(7, right)
        }
        clock.advance(PasscodeGate.firstWait)
        #expect(try gate.admit(7, right) == .right(clearing: true), "after the wait the right one is admitted")
        gate.clearFailures(7)

        // No verifier (uid 8): the TPM decides, so each is counted as a
        // failure before it is let through.
        let undecided = parallelAttempts(gate, 8, wrong, count: 32)
        let through = undecided.filter { (try? $0.get()) == .undecided }.count
        #expect(through == PasscodeGate.freeTries, "let through \(through) times: \(undecided)")
        #expect(gate.failures(8) == PasscodeGate.freeTries)
        gate.refund(8)
        #expect(gate.failures(8) == PasscodeGate.freeTries - 1, "a refund gives one back")
        #expect(try gate.admit(8, right) == .undecided, "below the free tries again: the wait went with it")
        gate.recordSuccess(8, right)
        #expect(gate.failures(8) == 0, "the TPM's yes clears the count")
        #expect(try gate.admit(8, right) == .right(clearing: false), "and records the verifier")
    }

    @Test("the gate fails closed: with the daemon's database refusing writes (query_only) an attempt is refused with a storage error naming the passcode attempts, never admitted uncounted, and the count is unchanged; reads failing (the table gone) refuse the check; writable again, attempts are judged and counted")
    func passcodeGateFailsClosed() throws {
        let folder = try makeTemporaryDirectory("tsgateclosed")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clock = TestClock()
        let database = try SQLiteDatabase(path: folder + "/daemon.sqlite")
        let gate = try PasscodeGate(database: database, now: { clock.now() })
        let right = SecureBytes(copying: Array("right-passcode".utf8))
        let wrong = SecureBytes(copying: Array("wrong-passcode".utf8))
        gate.recordSuccess(7, right)
        #expect(try gate.admit(7, wrong) == .wrong)
        #expect(gate.failures(7) == 1)

        // Mid-way, the database refuses every write (as a read-only or full disk does).
        try database.execute("PRAGMA query_only = 1")
        for passcode in [wrong, right] {
            do {
                let admitted = try gate.admit(7, passcode)
                Issue.record("admitted with the count unwritable: \(admitted)")
            } catch {
                guard case .storage(let failure) = error else {
                    Issue.record("not a storage error: \(error)")
                    continue
                }
                #expect(failure.message.contains("cannot record passcode attempts"), "\(failure)")
            }
        }
        #expect(throws: AuthenticationError.self) { try gate.admit(8, wrong) }
        #expect(throws: AuthenticationError.self) { try gate.recordFailure(7) }
        #expect(throws: AuthenticationError.self) { try gate.reserveNVWrite(7) }
        try database.execute("PRAGMA query_only = 0")
        #expect(gate.failures(7) == 1, "nothing was half-written")
        #expect(try gate.admit(7, wrong) == .wrong, "writable again: judged and counted")
        #expect(gate.failures(7) == 2)

        // The count cannot be read: the check refuses too.
        try database.execute("DROP TABLE throttle")
        #expect(throws: AuthenticationError.self) { try gate.check(7) }
        #expect(throws: AuthenticationError.self) { try gate.admit(7, right) }
    }

    @Test("the gate on a full disk (its database on a 1 MiB tmpfs, filled up): a wrong passcode is refused with the storage error, never admitted uncounted, and so is the right one (known right or not: no oracle); with space again they are judged, the wrong one counted")
    func passcodeGateFullDisk() throws {
        let folder = try makeTemporaryDirectory("tsgatefull")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        guard mount("tmpfs", folder, "tmpfs", 0, "size=1m,mode=0700") == 0 else {
            throw RigFailure("mount tmpfs on \(folder): \(String(cString: strerror(errno))) (the test runs as root, as CI does)")
        }
        defer { umount2(folder, Int32(MNT_DETACH)) }
        let clock = TestClock()
        let gate = try PasscodeGate(database: try SQLiteDatabase(path: folder + "/daemon.sqlite"), now: { clock.now() })
        let right = SecureBytes(copying: Array("right-passcode".utf8))
        let wrong = SecureBytes(copying: Array("wrong-passcode".utf8))
        gate.recordSuccess(7, right)
        #expect(try gate.admit(7, wrong) == .wrong)

        // Fill the disk. Close-on-exec: a child another test spawns
        // meanwhile must not inherit the descriptor, which would keep the
        // file's pages after the unlink below (seen in a full run: the
        // disk stayed full).
        let fill = folder + "/fill"
        let fd = open(fill, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        #expect(fd >= 0)
        let block = [UInt8](repeating: 0, count: 4096)
        while write(fd, block, block.count) > 0 {}
        #expect(errno == ENOSPC)
        close(fd)
        do {
            let admitted = try gate.admit(7, wrong)
            Issue.record("admitted on a full disk: \(admitted)")
        } catch {
            guard case .storage(let failure) = error else {
                Issue.record("not a storage error: \(error)")
                return
            }
            #expect(failure.message.contains("cannot record passcode attempts"), "\(failure)")
        }
        for knownRight in [false, true] {
            #expect(throws: AuthenticationError.self, "the right passcode on a full disk (known right: \(knownRight))") {
                try gate.admit(7, right, knownRight: knownRight)
            }
        }
        #expect(gate.failures(7) == 1)

        unlink(fill)
        #expect(try gate.admit(7, wrong) == .wrong, "space again: judged")
        #expect(gate.failures(7) == 2, "and counted")
        #expect(try gate.admit(7, right) == .right(clearing: true), "the right one too")
    }

    @Test("the NV-write rate limit: five passcode sets, changes or removes a minute per uid, the sixth refused with when to retry (the right passcode too), another uid not held; the window moves with the gate's clock")
    func passcodeGateNVRateLimit() throws {
        let folder = try makeTemporaryDirectory("tsgatenv")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let clock = TestClock()
        let gate = try PasscodeGate(database: try SQLiteDatabase(path: folder + "/daemon.sqlite"), now: { clock.now() })
        let right = SecureBytes(copying: Array("right-passcode".utf8))
        gate.recordSuccess(7, right)
        gate.recordSuccess(8, right)
        try gate.reserveNVWrite(7)
        for n in 2...PasscodeGate.nvWrites {
            clock.advance(1)
            #expect(try gate.admit(7, right, writesNV: true) == .right(clearing: false), "NV write \(n)")
        }
        #expect(try gate.admit(7, right) == .right(clearing: false), "an operation that writes no NV is not held")
        let wait = UInt32(PasscodeGate.nvWindow) - UInt32(PasscodeGate.nvWrites - 1)
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: wait)) { try gate.admit(7, right, writesNV: true) }
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: wait)) { try gate.reserveNVWrite(7) }
        #expect(try gate.admit(8, right, writesNV: true) == .right(clearing: false), "another uid is not held")
        #expect(gate.failures(7) == 0, "a refusal for NV wear is no wrong passcode")
        clock.advance(Double(wait) - 1)
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: 1)) { try gate.reserveNVWrite(7) }
        clock.advance(1)
        try gate.reserveNVWrite(7)
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: 1)) { try gate.reserveNVWrite(7) }
    }

    /// A server whose TPM is missing (every user's engine fails to open),
    /// and one end of a socketpair it serves.
    private func served(_ folder: String) throws -> (DaemonServer, FrameSocket) {
        let settings = DaemonServer.Settings(home: URL(fileURLWithPath: folder), tpm: .tcti("swtpm:path=\(folder)/no-tpm"),
                                             reader: .id("none"), timeout: .seconds(3600))
        let server = try DaemonServer(settings: settings) { _ in }
        return (server, try connect(server))
    }

    /// A new connection to `server`, over a socketpair.
    private func connect(_ server: DaemonServer) throws -> FrameSocket {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw RigFailure("socketpair: \(String(cString: strerror(errno)))")
        }
        server.serve(connection: FrameSocket(owning: OwnedDescriptor(adopting: ends[0])))
        return FrameSocket(owning: OwnedDescriptor(adopting: ends[1]))
    }

    /// One request and its answer; the blocking reads off the cooperative
    /// pool, which the daemon's sessions need.
    private func ask<R: EngineRequest>(_ client: FrameSocket, _ request: R) async throws -> Outcome<R> {
        try client.send(try DaemonWire.Frame(request: request, program: "unit", interactive: false))
        let frame = try await receive(client)
        #expect(frame.kind == .response)
        return try frame.decodeCarrying(Outcome<R>.self)
    }

    private func receive(_ client: FrameSocket) async throws -> DaemonWire.Frame {
        try await offPool { try client.receive(idle: .seconds(300), stall: .seconds(300)) }
    }

    @Test("a session over a socketpair: status answers part by part when the user's engine cannot open; another operation gets its typed failure; a grant the connection does not hold is invalidContext; the connection serves on after each")
    func sessionAnswers() async throws {
        let folder = try makeTemporaryDirectory("tssession")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (server, client) = try served(folder)
        defer { server.stop() }

        guard case .success(let status) = try await ask(client, Calls.Status()) else {
            Issue.record("status did not answer")
            return
        }
        #expect(!status.status.tpm.available && status.status.problem != nil, "\(status.status)")
        guard case .failure(let failure) = try await ask(client, Calls.PasscodeIsSet()) else {
            Issue.record("passcode-is-set without a TPM succeeded")
            return
        }
        #expect(failure.message != nil)
        var read = Calls.Secret(service: "s", account: "a", grant: nil)
        read.grant = GrantReference(id: 42)
        guard case .failure(.authentication(.invalidContext)) = try await ask(client, read) else {
            Issue.record("a grant the connection does not hold was not refused")
            return
        }
        guard case .success = try await ask(client, Calls.Status()) else {
            Issue.record("the connection did not serve on")
            return
        }
        #expect(server.connectionCount == 1)
    }

    @Test("a session refuses, then closes: an operation it does not know, a frame of protocol version 1 (answered in version 1's framing), a response frame from the client; another connection of the same daemon is served on")
    func sessionRefuses() async throws {
        let folder = try makeTemporaryDirectory("tsrefuse")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (server, unknown) = try served(folder)
        defer { server.stop() }
        let bystander = try connect(server)

        var head = RequestHead(operation: "format-disk", program: nil, interactive: false)
        try unknown.send(try DaemonWire.Frame(.request, ["head": head]))
        let refused = try await receive(unknown)
        guard case .refused(let why) = try refused.decodeCarrying(Outcome<Calls.Status>.self) else {
            Issue.record("an unknown operation was not refused")
            return
        }
        #expect(why.contains("format-disk"), "\(why)")
        await #expect(throws: DaemonWireError.closed) { try await receive(unknown) }

        // Version 1: the daemon answers in version 1's framing.
        let old = try connect(server)
        var frame = try DaemonWire.Frame(.request, ["call": "status"])
        frame.version = 1
        try old.send(frame)
        await #expect(throws: DaemonWireError.version(1)) { try await receive(old) }

        // A frame only the daemon sends.
        let confused = try connect(server)
        head.operation = "status"
        try confused.send(try DaemonWire.Frame(response: Outcome<Calls.Status>.refused("no")))
        await #expect(throws: DaemonWireError.closed) { try await receive(confused) }

        // The connection that did nothing wrong is served on.
        guard case .success = try await ask(bystander, Calls.Status()) else {
            Issue.record("another connection was not served")
            return
        }
    }
}
