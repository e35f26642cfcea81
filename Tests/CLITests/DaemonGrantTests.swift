import Foundation
import Glibc
import TestRigs
import Testing

/// Grants as a hostile program running as the user would use them: it
/// speaks touchstoned's protocol itself (frames made by hand here, not the
/// client library, whose own caps it would not honour).
@Suite("touchstoned bounds the grants it holds")
struct DaemonGrantTests {
    @Test("a grant opens items for the reuse window asked and never past 300 s after its touch; one asked with no window opens one read, within 300 s also under a daemon timeout of an hour; a connection holds at most 16; each read through a grant is logged with the item's service and account (also one by reference) and never the secret")
    func grantsBoundedByTheDaemon() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            let clock = rig.clockFile
            func advance(_ seconds: Double) throws { try rig.advanceClock(seconds) }
            try advance(0)
            // A daemon timeout past 300 s: a one-use grant must not outlive 300 s either.
            try rig.startDaemon(extraArguments: ["--timeout", "3600"], extraEnvironment: ["TOUCHSTONE_TEST_CLOCK_FILE": clock])

            // This process (root) is the attacker's user: its vault in the
            // daemon, a finger, three items that open with any finger.
            try rig.setUpRoot(as: "root-finger")
            for n in 1...3 {
                #expect(try rig.asRoot(["add", "b\(n)", "root", "--access", "biometry-any"], stdin: Array("secret-\(n)".utf8)).wait().code == 0)
            }

            let client = try RawClient(rig.socket)
            /// A grant of one touch, asked with `reuse` seconds.
            func grant(reuse: Double) throws -> UInt64? {
                client.send(#"{"head":{"operation":"authenticate","program":"hostile","interactive":false},"request":{"access":{"flags":["biometry-any"],"combination":"any"},"reasonText":"item 1","interactionNotAllowed":false,"touchTimeoutMilliseconds":60000,"reuseSeconds":\#(reuse)}}"#)
                #expect(rig.touch("root-finger").code == 0)
                let answer = try client.receive()
                let success = (answer.json["success"] as? [String: Any])?["_0"] as? [String: Any]
                return (success?["id"] as? NSNumber)?.uint64Value
            }
            /// Item `n` read through grant `id`: its secret, or the failure.
            func read(_ n: Int, _ id: UInt64) throws -> (secret: String?, failure: String?) {
                client.send(#"{"head":{"operation":"get","program":"hostile","interactive":false},"request":{"service":"b\#(n)","account":"root","grant":{"id":\#(id),"passcode":false,"biometricMatch":true}}}"#)
                let answer = try client.receive()
                if answer.json["success"] != nil { return (answer.secrets.first.map { String(decoding: $0, as: UTF8.self) }, nil) }
                let failure = (answer.json["failure"] as? [String: Any])?["_0"] as? [String: Any]
                return (nil, failure?.keys.first ?? "\(answer.json)")
            }

            // A window of 60 s: reads within it open, after it nothing does.
            let sixty = try #require(try grant(reuse: 60))
            #expect(try read(1, sixty).secret == "secret-1")
            #expect(try read(2, sixty).secret == "secret-2")
            try advance(61)
            #expect(try read(3, sixty).failure == "interactionNotAllowed")

            // Asked for an hour: 300 s at most.
            let hour = try #require(try grant(reuse: 3600))
            try advance(290)
            #expect(try read(1, hour).secret == "secret-1")
            try advance(11)
            #expect(try read(1, hour).failure == "interactionNotAllowed")

            // No window: one read, then nothing.
            let once = try #require(try grant(reuse: 0))
            #expect(try read(1, once).secret == "secret-1")
            #expect(try read(2, once).failure == "interactionNotAllowed")
            // Nor past 300 s, whatever the daemon's timeout: 290 s opens, 301 s does not.
            let late = try #require(try grant(reuse: 0))
            try advance(290)
            #expect(try read(1, late).secret == "secret-1")
            let later = try #require(try grant(reuse: 0))
            try advance(301)
            #expect(try read(1, later).failure == "interactionNotAllowed")

            // An item read by its reference (as the Secret Service provider
            // reads): the log names its service and account, not its number.
            let byReference = try #require(try grant(reuse: 60))
            client.send(#"{"head":{"operation":"item-secret","program":"hostile","interactive":false},"request":{"reference":{"id":2},"grant":{"id":\#(byReference),"passcode":false,"biometricMatch":true}}}"#)
            let opened = try client.receive()
            #expect(opened.secrets.first.map { String(decoding: $0, as: UTF8.self) } == "secret-2", "\(opened.json)")

            // Seventeen grants: the oldest is gone, the newest opens.
            var ids: [UInt64] = []
            for _ in 0..<17 { ids.append(try #require(try grant(reuse: 300))) }
            #expect(try read(1, ids[0]).failure == "authentication", "the oldest of 17 still opens")
            #expect(try read(1, ids[16]).secret == "secret-1")

            let log = rig.daemonLog
            #expect(log.contains("opened b1 / root through a grant made"), "\(log)")
            #expect(log.contains("get: ok; opened b2 / root through a grant made") && !log.contains("opened item 2"), "\(log)")
            #expect(log.contains("a grant past its window presented for b3 / root"), "\(log)")
            #expect(log.contains("over the 16 a connection holds"), "\(log)")
            #expect(!log.contains("secret-1") && !log.contains("secret-2"), "a secret in the log")
        }
    }

    @Test("an import of fingers into a vault that has enrolled fingers is refused by the daemon itself, spoken by hand with the right passcode; the enrolled finger still opens")
    func importOverEnrolledFingers() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            try rig.setUp(rig.alice, finger: "right-index-finger", as: "alice-finger")
            #expect(rig.run(rig.alice, ["add", "bank", "alice", "--access", "biometry-any"], stdin: Array("alice-bank".utf8)).code == 0)

            // As root, with a finger of its own, over the raw protocol.
            let home = rig.scratch + "/root-home"
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
            let environment = ["HOME": home, "TOUCHSTONE_HOME": home + "/ts", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
            #expect(try CLIProcess.start(["--daemon", rig.socket, "passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(DaemonRig.passcode),
                                         environment: environment, scratch: rig.scratch, program: rig.touchstone).wait().code == 0)
            let enrolling = try CLIProcess.start(["--daemon", rig.socket, "enroll", "right-index-finger", "--passcode-fd", "0"],
                                                 stdin: CLISandbox.line(DaemonRig.passcode), environment: environment,
                                                 scratch: rig.scratch, program: rig.touchstone)
            #expect(rig.touch("root-finger", count: 5).code == 0)
            #expect(enrolling.wait().code == 0)

            let client = try RawClient(rig.socket)
            client.send(#"{"head":{"operation":"import-fingers","program":"hostile","interactive":false},"request":{"driver":"virtual_device","deviceID":"0","fingers":["left-thumb"],"passcode":0,"prints":[1]}}"#,
                        secrets: [Array(DaemonRig.passcode.utf8), Array("not a print".utf8)])
            let answer = try client.receive()
            let failure = (answer.json["failure"] as? [String: Any])?["_0"] as? [String: Any]
            let storage = ((failure?["storage"] as? [String: Any])?["_0"] as? [String: Any])?["message"] as? String ?? "\(answer.json)"
            #expect(storage.contains("has enrolled fingers"), "\(answer.json)")

            // The enrolled finger still opens (root's own vault, and alice's).
            let opened = rig.withTouch(rig.alice, "alice-finger", ["get", "bank", "alice"])
            #expect(opened.stdoutText == "alice-bank", "\(opened.stderr)")
        }
    }
}

/// The daemon's protocol spoken by hand: frames with a JSON control part
/// written as text, secrets appended; answers read whole.
final class RawClient {
    let connection: RawConnection

    init(_ path: String) throws { connection = try RawConnection(path) }

    /// Sends a frame of `kind` (a request by default; protocol version 2).
    func send(_ control: String, secrets: [[UInt8]] = [], kind: UInt8 = 1) {
        let bytes = Array(control.utf8)
        var body: [UInt8] = [2, kind] + Self.bigEndian(bytes.count) + bytes
        for secret in secrets { body += Self.bigEndian(secret.count) + secret }
        connection.send(Self.bigEndian(body.count) + body)
    }

    struct Answer {
        let kind: UInt8
        let json: [String: Any]
        let secrets: [[UInt8]]
    }

    /// The next response frame (events before it are skipped), within a minute.
    func receive() throws -> Answer {
        while true {
            let length = Self.number(try read(4))
            let body = try read(length)
            guard body.count >= 6 else { throw RigFailure("a frame of \(body.count) bytes") }
            let controlLength = Self.number(Array(body[2..<6]))
            let control = Data(body[6..<(6 + controlLength)])
            var at = 6 + controlLength
            var secrets: [[UInt8]] = []
            while at < body.count {
                let n = Self.number(Array(body[at..<(at + 4)]))
                secrets.append(Array(body[(at + 4)..<(at + 4 + n)]))
                at += 4 + n
            }
            guard body[1] == 3 else { continue }  // events and prompts: not this test's
            let json = (try JSONSerialization.jsonObject(with: control)) as? [String: Any] ?? [:]
            return Answer(kind: body[1], json: json, secrets: secrets)
        }
    }

    private func read(_ count: Int) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: max(count, 1))
        while bytes.count < count {
            var poller = pollfd(fd: connection.fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 60_000) > 0 else { throw RigFailure("no answer in a minute") }
            let n = buffer.withUnsafeMutableBytes { Glibc.read(connection.fd, $0.baseAddress, count - bytes.count) }
            guard n > 0 else { throw RigFailure("the daemon closed the connection") }
            bytes += buffer[0..<n]
        }
        return bytes
    }

    private static func bigEndian(_ n: Int) -> [UInt8] { withUnsafeBytes(of: UInt32(n).bigEndian) { Array($0) } }

    private static func number(_ bytes: [UInt8]) -> Int {
        bytes.reduce(0) { $0 << 8 | Int($1) }
    }
}
