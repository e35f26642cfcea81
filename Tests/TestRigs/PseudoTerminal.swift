import Foundation
import Glibc
import TouchstonePOSIX

/// A pseudo-terminal of a test's: the master end to type into and to read
/// what the terminal shows (echoes, a program's prompts), and the slave
/// end's name; optionally one command run with it as its controlling
/// terminal (a session of its own, the terminal as its stdin, its stderr in
/// a file).
package final class PseudoTerminal: @unchecked Sendable {
    // @unchecked Sendable: used by one test at a time; `shown` and `pid`
    // change only through its own calls.
    package let master: Int32
    /// The slave end (/dev/pts/N).
    package let slaveName: String
    package private(set) var pid: pid_t?
    package private(set) var stderrPath: String?
    private let lock = NSLock()
    private var shown: [UInt8] = []

    package init() throws {
        // posix_openpt's way; unlockpt and ptsname_r come from libc by name
        // (Glibc's module leaves the XSI pseudo-terminal functions out).
        // ptsname_r, not ptsname: tests make terminals in parallel, and
        // ptsname's static buffer would hand one test another's terminal.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        typealias Unlock = @convention(c) (Int32) -> Int32
        typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
        var name = [CChar](repeating: 0, count: 128)
        guard master >= 0, let unlock = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unlockpt"),
              let named = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "ptsname_r"),
              unsafeBitCast(unlock, to: Unlock.self)(master) == 0,
              unsafeBitCast(named, to: Name.self)(master, &name, name.count) == 0 else {
            throw RigFailure("no pseudo-terminal: \(String(cString: strerror(errno)))")
        }
        slaveName = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        if let pid { kill(pid, SIGKILL); _ = ChildSpawn.waitForExit(pid) }
        close(master)
    }

    /// Runs `program` with this terminal as its controlling terminal.
    package func spawn(_ program: String, _ arguments: [String], stdout: String, environment: [String: String], scratch: String) throws {
        let stderrPath = scratch + "/tty-\(UInt32.random(in: 0...UInt32.max)).err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Opened after setsid, without O_NOCTTY: it becomes the controlling terminal.
        posix_spawn_file_actions_addopen(&actions, 0, slaveName, O_RDWR, 0)
        posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        pid = try ChildSpawn.start(program, arguments, actions: &actions, environment: environment, newSession: true)
        self.stderrPath = stderrPath
    }

    /// The spawned command's stderr so far.
    package var stderr: String { stderrPath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? "" }

    /// What the terminal showed so far.
    package var echoed: [UInt8] {
        drain()
        return lock.withLock { shown }
    }

    /// Waits (a minute at most) until the spawned command's stderr holds `text`.
    package func waitForStderr(_ text: String) async throws -> Bool {
        try await eventually { drain(); return stderr.contains(text) }
    }

    /// Waits (a minute at most) until the terminal has shown `text`.
    package func waitForShown(_ text: String) async throws -> Bool {
        try await eventually { String(decoding: echoed, as: UTF8.self).contains(text) }
    }

    /// Waits until the terminal's echo is off (the master reads the
    /// slave's settings): a program that turns it off with TCSAFLUSH, as
    /// pinentry-tty does after it prints its prompt, discards what was
    /// typed before; typed after this, nothing is lost.
    package func waitForEchoOff() async throws -> Bool {
        try await eventually {
            var settings = termios()
            return tcgetattr(master, &settings) == 0 && settings.c_lflag & tcflag_t(ECHO) == 0
        }
    }

    /// `waitForShown` blocking the calling thread (a test's own: `offPool`).
    package func blockingWaitForShown(_ text: String) -> Bool {
        blockingEventually { String(decoding: echoed, as: UTF8.self).contains(text) }
    }

    /// `waitForStderr` blocking the calling thread (a test's own: `offPool`),
    /// so that the answer to a prompt never waits for a pool thread while the
    /// program's own clock runs (a touch prompt ends after 30 s).
    package func blockingWaitForStderr(_ text: String) -> Bool {
        blockingEventually { drain(); return stderr.contains(text) }
    }

    /// `wait` blocking the calling thread (a test's own: `offPool`).
    package func blockingWait() -> Int32? {
        guard let pid else { return nil }
        var status: Int32 = 0
        let done = blockingEventually {
            drain()
            return waitpid(pid, &status, WNOHANG) == pid
        }
        if done { self.pid = nil }
        return done ? ChildSpawn.exitStatus(status) : nil
    }

    /// Types `bytes` at the terminal.
    package func type(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    package func type(_ text: String) { type(Array(text.utf8)) }

    /// Reads what the terminal showed (never blocks).
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var poller = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 0) > 0 else { return }
            let n = read(master, &buffer, buffer.count)
            guard n > 0 else { return }
            lock.withLock { shown += buffer[..<n] }
        }
    }

    /// The spawned command's exit status (a minute at most).
    package func wait() async throws -> Int32? {
        guard let pid else { return nil }
        var status: Int32 = 0
        var done = false
        _ = try await eventually {
            drain()
            done = waitpid(pid, &status, WNOHANG) == pid
            return done
        }
        if done { self.pid = nil }
        return done ? ChildSpawn.exitStatus(status) : nil
    }
}
