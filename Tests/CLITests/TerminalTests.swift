import Foundation
import Glibc
import Testing
import TestRigs
import TouchstoneSimulator

/// A pseudo-terminal for one command: the command's controlling terminal
/// (it runs in a session of its own, the terminal opened as its stdin), its
/// stderr in a file, and the master end for the test to type into and to
/// read what the terminal echoed.
private final class PseudoTerminal {
    let master: Int32
    let pid: pid_t
    let stderrPath: String
    private(set) var echoed: [UInt8] = []

    init(_ program: String, _ arguments: [String], stdout: String, environment: [String: String], scratch: String) throws {
        // posix_openpt's way; unlockpt and ptsname come from libc by name
        // (Glibc's module leaves the XSI pseudo-terminal functions out).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        typealias Unlock = @convention(c) (Int32) -> Int32
        typealias Name = @convention(c) (Int32) -> UnsafeMutablePointer<CChar>?
        guard master >= 0, let unlock = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unlockpt"),
              let named = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "ptsname"),
              unsafeBitCast(unlock, to: Unlock.self)(master) == 0,
              let name = unsafeBitCast(named, to: Name.self)(master) else {
            throw RigFailure("no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        let slave = String(cString: name)
        stderrPath = scratch + "/tty-\(UInt32.random(in: 0...UInt32.max)).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Opened after setsid, without O_NOCTTY: it becomes the controlling terminal.
        posix_spawn_file_actions_addopen(&actions, 0, slave, O_RDWR, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        pid = try ChildSpawn.start(program, arguments, actions: &actions, environment: environment, newSession: true)
    }

    deinit {
        kill(pid, SIGKILL)
        close(master)
    }

    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    /// Waits (a minute at most) until stderr holds `text`.
    func waitForStderr(_ text: String) async throws -> Bool {
        try await eventually { drain(); return stderr.contains(text) }
    }

    /// Types `text` at the terminal.
    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Reads what the terminal echoed so far (never blocks).
    func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else { return }
            let n = read(master, &buffer, buffer.count)
            guard n > 0 else { return }
            echoed += buffer[..<n]
        }
    }

    /// The exit status (a minute at most).
    func wait() async throws -> Int32? {
        var status: Int32 = 0
        var done = false
        _ = try await eventually {
            drain()
            done = waitpid(pid, &status, WNOHANG) == pid
            return done
        }
        return done ? ChildSpawn.exitStatus(status) : nil
    }
}

@Suite("touchstone at a terminal (a pseudo-terminal of the test's)")
struct TerminalTests {
    @Test("Enter while a touch is awaited asks for the passcode, typed with echo off; the secret opens: embedded, and through the simulator's touchstoned (touchstone-get)",
          arguments: [false, true])
    func enterForThePasscode(throughDaemon: Bool) async throws {
        let sandbox = try CLISandbox(startSimulator: false)
        defer { sandbox.close() }
        #expect(sandbox.run(["sim", "start"] + (throughDaemon ? ["--daemon"] : [])).code == 0)
        #expect(sandbox.setPasscode().code == 0)
        #expect(sandbox.enroll("right-index-finger", as: "alice").code == 0)
        #expect(sandbox.run(["--sim", "add", "s", "a", "--access", "user-presence"], stdin: Array("opened".utf8)).code == 0)

        let stdoutPath = sandbox.scratch + "/tty-get.out"
        let terminal = try PseudoTerminal(CLIProcess.binary, ["--sim", "get", "s", "a"], stdout: stdoutPath,
                                          environment: sandbox.environment, scratch: sandbox.scratch)
        #expect(try await terminal.waitForStderr("Enter: use passcode"), "\(terminal.stderr)")
        terminal.type("\n")
        #expect(try await terminal.waitForStderr("Passcode: "), "\(terminal.stderr)")
        terminal.type(CLISandbox.passcode + "\n")
        #expect(try await terminal.wait() == 0, "\(terminal.stderr)")
        #expect((try? String(contentsOfFile: stdoutPath, encoding: .utf8)) == "opened")
        // The terminal echoes what is typed with echo on (the Enter), and
        // not the passcode.
        let echoed = String(decoding: terminal.echoed, as: UTF8.self)
        #expect(echoed.contains("\r\n"), "nothing echoed at all: \(terminal.echoed)")
        #expect(!echoed.contains(CLISandbox.passcode), "the passcode was echoed: \(echoed)")
        if throughDaemon {
            let log = (try? String(contentsOfFile: sandbox.home + "/sim/daemon.log", encoding: .utf8)) ?? ""
            #expect(log.contains("(touchstone-get): get: ok"), "\(log)")
        }
    }
}
