import Foundation
import Glibc
import TestRigs
import Testing

/// What a client's frames may hold of the daemon, spoken by hand as a
/// hostile program would: a frame dribbled a byte at a time, replies to no
/// prompt, large frames announced and never sent.
@Suite("touchstoned's limits on a client's frames")
struct DaemonFrameLimitsTests {
    /// A status request, as bytes on the wire.
    static let statusFrame: [UInt8] = {
        let control = Array(#"{"head":{"operation":"status","program":"hostile","interactive":false},"request":{}}"#.utf8)
        let body: [UInt8] = [2, 1] + bigEndian(control.count) + control
        return bigEndian(body.count) + body
    }()

    static func bigEndian(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(n).bigEndian) { Array($0) } }

    /// A rig whose daemon runs with a 30 s timeout, and a reading of that
    /// daemon's locked memory (KiB).
    static func rigMeasuringLockedMemory() throws -> (DaemonRig, () -> Int) {
        let rig = try DaemonRig(startDaemon: false)
        do {
            try rig.startDaemon(extraArguments: ["--timeout", "30"])
            let daemon = try #require(rig.daemon?.pid)
            return (rig, { lockedKiB(of: daemon) })
        } catch {
            rig.close()
            throw error
        }
    }

    /// A process's locked memory (VmLck in /proc/PID/status), in KiB; -1
    /// when it cannot be read.
    static func lockedKiB(of pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmLck:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? -1
    }

    @Test("a whole frame is answered; the same frame dribbled a byte every 0.7 s must arrive whole within the timeout (2 s), not per byte: the connection is closed before it ends")
    func dribbledFrame() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            try rig.startDaemon(extraArguments: ["--timeout", "2"])

            let whole = try RawClient(rig.socket)
            whole.sendRaw(Self.statusFrame)
            #expect(try whole.receive().json["success"] != nil, "a whole frame is answered")

            let dribbler = try RawConnection(rig.socket)
            var closedAt: Int?
            for (index, byte) in Self.statusFrame.enumerated() {
                dribbler.send([byte])
                if dribbler.readUntilClosed(seconds: 0.7).closed {
                    closedAt = index
                    break
                }
            }
            #expect(closedAt != nil, "the whole frame went through a byte at a time")
            #expect((closedAt ?? .max) < Self.statusFrame.count - 1)
        }
    }

    @Test("replies to no prompt every 0.7 s do not keep an idle connection open past the timeout (2 s); a connection with a request answered is served until then")
    func strayReplies() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            try rig.startDaemon(extraArguments: ["--timeout", "2"])
            let client = try RawClient(rig.socket)
            client.sendRaw(Self.statusFrame)
            #expect(try client.receive().json["success"] != nil)
            var closed = false
            for _ in 0..<30 where !closed {
                client.send(#"{"id":4242,"answer":{"fallback":{}}}"#, kind: 2)
                closed = client.connection.readUntilClosed(seconds: 0.7).closed
            }
            #expect(closed, "stray replies kept the connection open for 21 s")
            #expect(rig.daemonLog.contains("replies to no prompt: connection closed"), "\(rig.daemonLog)")
        }
    }

    @Test("32 frames each announcing 1.3 MB and sending 16 bytes lock no more of the daemon's memory than what arrived (VmLck), and another client is served meanwhile")
    func announcedFrames() async throws {
        try await blockingTest {
            let (rig, lockedKiB) = try Self.rigMeasuringLockedMemory()
            defer { rig.close() }
            let before = lockedKiB()
            #expect(before >= 0)
            var stalled: [RawConnection] = []
            for _ in 0..<32 {
                let connection = try RawConnection(rig.socket)
                connection.send(Self.bigEndian(1_300_000) + [2, 1] + Self.bigEndian(200) + Array(repeating: 0x20, count: 10))
                stalled.append(connection)
            }
            // This uid is at its 32 connections; another user is served.
            try rig.setUp(rig.alice)
            #expect(rig.run(rig.alice, ["add", "note", "alice", "--access", "none"], stdin: Array("alice-note".utf8)).code == 0)
            #expect(rig.run(rig.alice, ["get", "note", "alice"]).stdoutText == "alice-note", "another user was not served")
            let during = lockedKiB()
            // 32 frames of 1.3 MB would lock about 41 MB; what arrived is 16 bytes each.
            #expect(during - before < 4 * 1024, "VmLck grew from \(before) to \(during) KiB")
            withExtendedLifetime(stalled) {}
        }
    }
@Test("32 frames of 1.3 MB, each sent but for its last byte, by one user: the daemon locks at most that user's budget (four such frames, VmLck), refuses the rest with a clear error, serves another user meanwhile, and serves the first again once its frames went")
    func lockedMemoryBudgetPerUser() async throws {
        try await blockingTest {
            let (rig, lockedKiB) = try Self.rigMeasuringLockedMemory()
            defer { rig.close() }
            // The path works: a whole frame from this user is answered.
            do {
                let first = try RawClient(rig.socket)
                first.sendRaw(Self.statusFrame)
                #expect(try first.receive().json["success"] != nil)
            }

            let before = lockedKiB()
            let length = 1_300_000
            let body: [UInt8] = [2, 1] + Self.bigEndian(200) + Array(repeating: 0x20, count: length - 7)
            var connections: [RawConnection] = []
            for _ in 0..<32 {
                let connection = try RawConnection(rig.socket)
                connection.send(Self.bigEndian(length) + body)
                connections.append(connection)
            }
            var refused = 0, open = 0
            for connection in connections {
                let (closed, bytes) = connection.readUntilClosed(seconds: 0.2)
                if closed {
                    let text = String(decoding: bytes, as: UTF8.self)
                    #expect(text.contains("hold the locked memory the daemon gives one user"), "\(text)")
                    refused += 1
                } else {
                    open += 1
                }
            }
            // Four frames fit the budget (4 x 1.25 MiB); the rest were refused.
            #expect(open <= 4 && refused >= 28, "\(open) open, \(refused) refused")
            let during = lockedKiB()
            // 32 such frames would lock about 41 MB (here the daemon's
            // RLIMIT_MEMLOCK, 8 MiB unless raised, stops it first); the
            // budget is 5 MiB.
            #expect(during - before < 6 * 1024, "VmLck grew from \(before) to \(during) KiB")

            // Another user is served meanwhile.
            try rig.setUp(rig.alice)
            #expect(rig.run(rig.alice, ["add", "note", "alice", "--access", "none"], stdin: Array("alice-note".utf8)).code == 0)
            #expect(rig.run(rig.alice, ["get", "note", "alice"]).stdoutText == "alice-note", "another user was not served")

            // The stalled frames go with their connections: this user is served again.
            connections.removeAll()
            #expect(blockingEventually {
                guard let again = try? RawClient(rig.socket) else { return false }
                again.sendRaw(Self.statusFrame)
                return (try? again.receive().json["success"]) != nil
            }, "the budget was not given back")
        }
    }
}

extension RawClient {
    /// Bytes as they are, already framed.
    func sendRaw(_ bytes: [UInt8]) { connection.send(bytes) }
}
