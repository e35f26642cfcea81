import Foundation
import Glibc
import TestRigs
import Testing

/// A client that stops reading, as a hostile program would: it asks
/// touchstoned for a large secret over the raw protocol and never reads the
/// answer.
@Suite("touchstoned and a client that never reads")
struct DaemonSlowClientTests {
    @Test("a client that asks for a 1 MiB secret, never reads, and keeps talking so it is never idle: the daemon's send gives up after its timeout and closes that connection, having written less than the answer; meanwhile and after, other clients are served")
    func clientThatNeverReads() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            try rig.startDaemon(extraArguments: ["--timeout", "2"])
            try rig.setUp(rig.alice, finger: "right-index-finger", as: "right-index")
            #expect(rig.run(rig.alice, ["add", "note", "alice", "--access", "none"], stdin: Array("plain-secret".utf8)).code == 0)

            // The slow client is this process (root): its own vault in the
            // daemon, an item of 1 MiB that opens without authentication.
            let big = [UInt8](repeating: 0x5a, count: 1 << 20)
            let rootHome = rig.scratch + "/root-home"
            try FileManager.default.createDirectory(atPath: rootHome, withIntermediateDirectories: true)
            let added = try CLIProcess.start(["--daemon", rig.socket, "add", "big", "root", "--access", "none"], stdin: big,
                                             environment: ["HOME": rootHome, "TOUCHSTONE_HOME": rootHome + "/ts",
                                                           "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"],
                                             scratch: rig.scratch, program: rig.touchstone).wait()
            #expect(added.code == 0, "\(added.stderr)")

            // The request, spoken by hand: a get of the big item, then it reads nothing.
            let slow = try RawConnection(rig.socket)
            var small: Int32 = 4096
            setsockopt(slow.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
            let control = Array(#"{"head":{"operation":"get","program":"slow","interactive":false},"request":{"service":"big","account":"root"}}"#.utf8)
            let body: [UInt8] = [2, 1] + Self.bigEndian(control.count) + control
            slow.send(Self.bigEndian(body.count) + body)

            // It keeps talking (stray replies to no prompt, every 300 ms), so
            // it is never idle: only the send's own deadline can end it.
            let chatter = Self.chatter(slow.fd)
            defer { chatter.cancel() }

            // While its answer waits, another client is served.
            let served = rig.run(rig.alice, ["get", "note", "alice"])
            #expect(served.stdoutText == "plain-secret", "\(served.stderr)")
            // The daemon gives up on the send (its timeout, 2 s) and says so.
            #expect(blockingEventually { rig.daemonLog.contains("the answer could not be sent") }, "\(rig.daemonLog)")
            chatter.cancel()
            let (closed, received) = Self.readUntilClosed(slow.fd, seconds: 30)
            #expect(closed, "the connection stayed open")
            #expect(received.count < big.count, "the whole answer arrived: \(received.count) bytes")
            let after = rig.run(rig.alice, ["get", "note", "alice"])
            #expect(after.stdoutText == "plain-secret", "\(after.stderr)")
            #expect(rig.daemon?.poll() == nil, "the daemon exited: \(rig.daemonLog)")
        }
    }

    /// Sends a reply frame to a prompt that never was, every 300 ms for at
    /// most two minutes, until cancelled.
    private static func chatter(_ fd: Int32) -> Task<Void, Never> {
        let control = Array(#"{"id":999,"answer":{"fallback":{}}}"#.utf8)
        let body: [UInt8] = [2, 2] + bigEndian(control.count) + control
        let frame = bigEndian(body.count) + body
        return Task.detached {
            for _ in 0..<400 where !Task.isCancelled {
                _ = frame.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
                try? await Task.sleep(for: .milliseconds(300))
            }
        }
    }

    /// Reads `fd` until the peer closes it or `seconds` pass.
    private static func readUntilClosed(_ fd: Int32, seconds: Double) -> (closed: Bool, bytes: [UInt8]) {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while deadline.timeIntervalSinceNow > 0 {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(deadline.timeIntervalSinceNow * 1000) + 1) > 0 else { continue }
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n <= 0 { return (true, received) }
            received += buffer[0..<n]
        }
        return (false, received)
    }

    private static func bigEndian(_ n: Int) -> [UInt8] {
        withUnsafeBytes(of: UInt32(n).bigEndian) { Array($0) }
    }
}
