import Foundation
import TouchstoneSecure

/// Runs a program with posix_spawn and collects its stdout and stderr.
///
/// Not Foundation's Process: on Linux its waitUntilExit polls the run loop
/// about every 50 ms, which would add tens of milliseconds to every tool
/// step and flatter the module in the comparison. A shell script pays only
/// fork/exec and the program itself; so does this.
enum ChildProcess {
    struct Outcome {
        /// The exit status, or 128 + the signal that killed it.
        var status: Int32
        /// Its stdout. The caller wipes it when it may hold a secret.
        var stdout: [UInt8]
        var stderr: [UInt8]
    }

    /// Runs `executable` with `arguments` and `environment` (stdin
    /// /dev/null) and waits for it to exit.
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> Outcome {
        let out = try makePipe()
        let err = try makePipe()
        defer { close(out.read); close(err.read) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out.write, 1)
        posix_spawn_file_actions_adddup2(&actions, err.write, 2)
        // The child starts with no signal blocked.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        // The parent's copies of the write ends must go, or EOF never comes.
        close(out.write)
        close(err.write)
        guard rc == 0 else { throw BenchError.setup("cannot run \(executable): \(String(cString: strerror(rc)))") }
        // Outputs are small (a key, a digest, a warning): reading one pipe to
        // its end before the other cannot fill the other's buffer.
        let stdout = readAll(out.read)
        let stderr = readAll(err.read)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS are macros: decode by hand.
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Outcome(status: code, stdout: stdout, stderr: stderr)
    }

    /// A pipe whose ends close on exec (only the dup2'd copies reach the child).
    private static func makePipe() throws -> (read: Int32, write: Int32) {
        var fds: [Int32] = [0, 0]
        // pipe2 does not import; the benchmark spawns from one thread only,
        // so setting FD_CLOEXEC right after pipe() leaves no window.
        guard pipe(&fds) == 0 else {
            throw BenchError.setup("pipe: \(String(cString: strerror(errno)))")
        }
        for fd in fds { _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    private static func readAll(_ fd: Int32) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &chunk, chunk.count)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            result += chunk.prefix(n)
        }
        secureWipe(&chunk)
        return result
    }
}
