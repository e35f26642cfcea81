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
            let wait = gate.recordFailure(7)
            #expect((wait != nil) == (n == PasscodeGate.freeTries), "try \(n) waits \(String(describing: wait))")
        }
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: UInt32(PasscodeGate.firstWait))) { try gate.check(7) }
        #expect(try gate.check(8) == 0, "another uid is not held")
        clock.advance(PasscodeGate.firstWait - 1)
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: 1)) { try gate.check(7) }
        clock.advance(1)
        #expect(try gate.check(7) == PasscodeGate.freeTries, "the wait is over; the count stays")
        #expect(gate.recordFailure(7) == PasscodeGate.firstWait * 2, "one more wrong doubles it")

        // A new gate on the same database: the count and the wait stayed.
        let again = try PasscodeGate(database: database, now: { clock.now() })
        #expect(throws: AuthenticationError.passcodeThrottled(retryAfterSeconds: UInt32(PasscodeGate.firstWait * 2))) { try again.check(7) }
        #expect(again.verify(7, right) == true, "the pepper is the database's")
        for _ in 0..<30 { _ = again.recordFailure(7) }
        #expect(again.recordFailure(7) == PasscodeGate.longestWait, "the wait stops growing at the longest")

        again.recordSuccess(7, right)
        #expect(try again.check(7) == 0, "a right passcode clears the count and the wait")
        again.forget(7)
        #expect(again.verify(7, right) == nil, "forget drops the verifier")
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
        try await offPool { try client.receive(idle: .seconds(60), stall: .seconds(60)) }
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
