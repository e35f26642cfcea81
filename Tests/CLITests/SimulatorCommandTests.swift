import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneSimulator

/// sim start / status / stop: idempotent, reported, and refused with a
/// clear message when the state directory is too deep for unix sockets.
@Suite("touchstone: the simulator's commands (subprocess)", .serialized)
struct SimulatorCommandTests {
    @Test("sim start is idempotent; sim status reports the swtpm; sim stop stops it (and is idempotent)")
    func startStatusStop() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox()
            defer { sandbox.close() }
            let again = sandbox.run(["sim", "start"])
            #expect(again.code == 0)
            #expect(again.stderr.contains("already running"))
            let status = sandbox.run(["sim", "status", "--json"])
            #expect(status.code == 0)
            let object = try #require(try JSONSerialization.jsonObject(with: Data(status.stdout)) as? [String: Any])
            #expect(object["running"] as? Bool == true)
            let pid = try #require(object["pid"] as? Int)
            #expect(kill(pid_t(pid), 0) == 0)
            #expect((object["tcti"] as? String)?.hasPrefix("swtpm:path=\(sandbox.home)/sim/") == true)
            #expect(FileManager.default.fileExists(atPath: sandbox.home + "/sim/tpm/pid"))

            #expect(sandbox.run(["sim", "stop"]).code == 0)
            #expect(sandbox.run(["sim", "status", "--json"]).stdoutText.contains(#""running":false"#))
            #expect(sandbox.run(["sim", "stop"]).code == 0)
            // Restarted, the simulator keeps its state: the vault still opens.
            #expect(sandbox.run(["sim", "start"]).code == 0)
            #expect(sandbox.run(["--sim", "list"]).code == 0)
        }
    }

    @Test("touchstone demo, the backend walk-through, still runs on its private swtpm")
    func backendDemo() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let result = sandbox.run(["demo"])
            #expect(result.code == 0, "\(result.stderr)")
            #expect(result.stdoutText.contains("Done: every step behaved as designed."))
        }
    }

    @Test("a state directory too deep for the simulator's sockets is refused with the limit")
    func tooDeep() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let deep = sandbox.root + "/" + String(repeating: "d", count: 100)
            let result = sandbox.run(["--home", deep, "sim", "start"])
            #expect(result.code == 1)
            #expect(result.stderr.contains("too deep"))
            #expect(result.stderr.contains("hint:"))
            #expect(!FileManager.default.fileExists(atPath: deep))
        }
    }

    @Test("sim print writes the synthetic impression the image reader gets, to a file or to standard output; with a simulator's folder it keeps the master there, the impression the same")
    func printSyntheticFinger() async throws {
        try await blockingTest {
            let sandbox = try CLISandbox(startSimulator: false)
            defer { sandbox.close() }
            let file = sandbox.root + "/alice-2.png"
            let written = sandbox.run(["sim", "print", "alice", "--impression", "2", "--output", file])
            #expect(written.code == 0, "\(written.stderr)")
            #expect(written.stderr.contains("wrote impression 2 of synthetic finger alice to \(file)"))
            let png = try [UInt8](Data(contentsOf: URL(fileURLWithPath: file)))
            #expect(try GreyImage(png: png) == SyntheticFingerprints.shared.impression(of: "alice", number: 2))

            // Standard output (a pipe here) gets the same bytes.
            let piped = sandbox.run(["sim", "print", "alice", "--impression", "2"])
            #expect(piped.code == 0, "\(piped.stderr)")
            #expect(piped.stdout == png)

            // Standard output a terminal: refused, the terminal not garbled.
            let terminal = try PseudoTerminal()
            try terminal.spawn(CLIProcess.binary, ["sim", "print", "alice"], stdout: terminal.slaveName,
                               environment: sandbox.environment, scratch: sandbox.scratch)
            #expect(terminal.blockingWait() == 64, "\(terminal.stderr)")
            #expect(terminal.stderr.contains("standard output is a terminal"))
            #expect(terminal.stderr.contains("hint: touchstone sim print alice --output FILE.png"))
            #expect(!String(decoding: terminal.echoed, as: UTF8.self).contains("PNG"))

            // A file that cannot be written: a clear error, nothing else.
            let nowhere = sandbox.run(["sim", "print", "alice", "--output", sandbox.root + "/missing/a.png"])
            #expect(nowhere.code == 1)
            #expect(nowhere.stderr.contains("cannot write \(sandbox.root)/missing/a.png"))

            // With a simulator's folder, the master is kept there for later
            // touches and prints, and the impression is the same.
            #expect(sandbox.run(["sim", "start", "--reader-kind", "image"]).code == 0)
            let master = sandbox.home + "/sim/fingers/" + SyntheticFingerprints.fileName("alice")
            #expect(!FileManager.default.fileExists(atPath: master))
            let kept = sandbox.run(["sim", "print", "alice", "--impression", "2"])
            #expect(kept.code == 0 && kept.stdout == png, "\(kept.stderr)")
            #expect(FileManager.default.fileExists(atPath: master))
            #expect(sandbox.run(["sim", "print", "alice", "--impression", "2"]).stdout == png, "the kept master gives the same impression")
        }
    }
}
