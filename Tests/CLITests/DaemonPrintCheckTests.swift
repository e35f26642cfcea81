import Foundation
import Glibc
import TestRigs
import Testing

/// An import of prints as a hostile program would send it: frames made by
/// hand, print bytes of its choosing. The daemon has its print checker (a
/// confined child) read them before it stores anything, and stores
/// libfprint's own serialization of what it read.
@Suite("touchstoned reads imported prints in a confined child")
struct DaemonPrintCheckTests {
    /// A real print: libfprint's serialization of right-thumb, simulated
    /// finger `mallory`, on virtual_device/0 (the print of the fixture's
    /// print file, after its 36-byte record header).
    static var mallory: [UInt8] {
        get throws {
            Array(try Data(contentsOf: URL(fileURLWithPath: MigrationTests.fixtureFolder + "/stranger-right-thumb.print")).dropFirst(36))
        }
    }

    @Test("an import of a real print into an empty vault, spoken by hand: stored, listed, and the finger opens a biometric item with a touch")
    func importWorks() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let root = try RootClient(rig)
            try root.setPasscode()

            let answer = try root.importFingers(["right-thumb"], prints: [try Self.mallory])
            #expect(answer.json["success"] != nil, "\(answer.json)")
            #expect(try root.fingers() == ["right-thumb"])
            #expect(try root.run(["add", "bank", "root", "--access", "biometry-any"], stdin: Array("root-bank".utf8)).code == 0)
            let opened = try root.withTouch("mallory", ["get", "bank", "root"])
            #expect(opened.code == 0 && opened.stdoutText == "root-bank", "\(opened.stderr)")
            let stranger = try root.withTouch("not-mallory", ["get", "bank", "root"])
            #expect(stranger.code == 2, "\(stranger.stderr)")
        }
    }

    @Test("garbage print bytes, a real print named as another finger or another reader: refused with a clear error, the vault unchanged, the daemon alive and another user served; then the real print goes in")
    func garbageRefused() async throws {
        try await blockingTest {
            let rig = try DaemonRig()
            defer { rig.close() }
            let root = try RootClient(rig)
            try root.setPasscode()

            let garbage = root.refusal(try root.importFingers(["left-thumb"], prints: [Array("not a print".utf8)]))
            #expect(garbage.contains("the print of left-thumb is not one libfprint reads (libfprint cannot read it"), "\(garbage)")
            let otherFinger = root.refusal(try root.importFingers(["left-thumb"], prints: [try Self.mallory]))
            #expect(otherFinger.contains("the print given as left-thumb on virtual_device/0 is libfprint's print of right-thumb on virtual_device/0"),
                    "\(otherFinger)")
            let otherReader = root.refusal(try root.importFingers(["right-thumb"], prints: [try Self.mallory], driver: "goodixmoc"))
            #expect(otherReader.contains("is libfprint's print of right-thumb on virtual_device/0"), "\(otherReader)")
            // Nothing stored; the daemon serves root and alice.
            #expect(try root.fingers() == [])
            #expect(rig.daemon?.poll() == nil, "the daemon exited")
            #expect(rig.run(rig.alice, ["passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(DaemonRig.passcode)).code == 0)

            // The same path with the real print, as what it is.
            #expect(try root.importFingers(["right-thumb"], prints: [try Self.mallory]).json["success"] != nil)
            #expect(try root.fingers() == ["right-thumb"])
        }
    }

    @Test("a checker that crashes, answers garbage or hangs (debug hook) refuses that import only: the vault unchanged, another user served meanwhile, the daemon alive; a real print then goes in through the same daemon")
    func checkerFailureRefusesOnlyTheImport() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            try rig.startDaemon(extraEnvironment: ["TOUCHSTONE_TEST_PRINT_CHECK": "1"])
            let root = try RootClient(rig)
            try root.setPasscode()

            let crashed = root.refusal(try root.importFingers(["right-thumb"], prints: [Array("test:abort".utf8)]))
            #expect(crashed.contains("the print checker crashed (signal 6"), "\(crashed)")
            let garbage = root.refusal(try root.importFingers(["right-thumb"], prints: [Array("test:garbage".utf8)]))
            #expect(garbage.contains("the print checker's answer does not read"), "\(garbage)")

            // A checker that never answers: alice is served while it hangs.
            let hanging = try RawClient(rig.socket)
            hanging.send(RootClient.importRequest(["right-thumb"], driver: "virtual_device"),
                         secrets: [Array(DaemonRig.passcode.utf8), Array("test:hang".utf8)])
            #expect(rig.run(rig.alice, ["passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(DaemonRig.passcode)).code == 0)
            let hung = root.refusal(try hanging.receive())
            #expect(hung.contains("the print checker did not finish within 10 s and was killed"), "\(hung)")

            #expect(try root.fingers() == [])
            #expect(rig.daemon?.poll() == nil, "the daemon exited")
            #expect(try root.importFingers(["right-thumb"], prints: [try Self.mallory]).json["success"] != nil)
            #expect(try root.fingers() == ["right-thumb"])
            #expect(rig.run(rig.alice, ["status"]).code == 0)
        }
    }
}

/// This process (root) as a client of the rig's daemon: its own vault
/// there, commands through the built `touchstone`, imports by hand.
struct RootClient {
    let rig: DaemonRig
    let environment: [String: String]

    init(_ rig: DaemonRig) throws {
        self.rig = rig
        let home = rig.scratch + "/root-home"
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        environment = ["HOME": home, "TOUCHSTONE_HOME": home + "/ts", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"]
    }

    func start(_ arguments: [String], stdin: [UInt8] = []) throws -> RunningCLI {
        try CLIProcess.start(["--daemon", rig.socket] + arguments, stdin: stdin, environment: environment,
                             scratch: rig.scratch, program: rig.touchstone)
    }

    func run(_ arguments: [String], stdin: [UInt8] = []) throws -> CLIResult { try start(arguments, stdin: stdin).wait() }

    /// Sets this vault's passcode (`DaemonRig.passcode`).
    func setPasscode() throws {
        let set = try run(["passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(DaemonRig.passcode))
        guard set.code == 0 else { throw RigFailure("passcode set: \(set.stderr)") }
    }

    /// The enrolled fingers (`fingers --json`).
    func fingers() throws -> [String] {
        let listed = try run(["fingers", "--json"])
        guard listed.code == 0 else { throw RigFailure("fingers: \(listed.stderr)") }
        return try JSONDecoder().decode([String].self, from: Data(listed.stdout))
    }

    /// Runs a command that waits for a touch and touches with `id`.
    func withTouch(_ id: String, _ arguments: [String]) throws -> CLIResult {
        let waiting = try start(arguments)
        guard waiting.waitForStderr("touch the reader") else { return waiting.wait() }
        let touched = rig.touch(id)
        let result = waiting.wait()
        return touched.code == 0 ? result : CLIResult(code: -1, stdout: result.stdout, stderr: "sim touch: \(touched.stderr)\n" + result.stderr)
    }

    /// An `import-fingers` request's control part: passcode secret 0, prints 1...
    static func importRequest(_ fingers: [String], driver: String, deviceID: String = "0") -> String {
        let names = fingers.map { "\"\($0)\"" }.joined(separator: ",")
        let prints = (1...fingers.count).map(String.init).joined(separator: ",")
        return #"{"head":{"operation":"import-fingers","program":"hostile","interactive":false},"request":{"driver":"\#(driver)","deviceID":"\#(deviceID)","fingers":[\#(names)],"passcode":0,"prints":[\#(prints)]}}"#
    }

    /// `import-fingers` with the right passcode, spoken by hand; the answer.
    func importFingers(_ fingers: [String], prints: [[UInt8]], driver: String = "virtual_device") throws -> RawClient.Answer {
        let client = try RawClient(rig.socket)
        client.send(Self.importRequest(fingers, driver: driver), secrets: [Array(DaemonRig.passcode.utf8)] + prints)
        return try client.receive()
    }

    /// The storage failure's message of an answer, or the answer.
    func refusal(_ answer: RawClient.Answer) -> String {
        let failure = (answer.json["failure"] as? [String: Any])?["_0"] as? [String: Any]
        return ((failure?["storage"] as? [String: Any])?["_0"] as? [String: Any])?["message"] as? String ?? "\(answer.json)"
    }
}
