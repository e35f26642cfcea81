import TouchstoneSimulator
import Foundation
import TouchstoneSecure
import TouchstoneTPM

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
        let spawned = Result { try ChildSpawn.start(executable, arguments, actions: &actions, environment: environment) }
        // The parent's copies of the write ends must go, or EOF never comes.
        close(out.write)
        close(err.write)
        let pid: pid_t
        do { pid = try spawned.get() } catch { throw BenchError.setup("\(error)") }
        // Outputs are small (a key, a digest, a warning): reading one pipe to
        // its end before the other cannot fill the other's buffer.
        let stdout = readAll(out.read)
        let stderr = readAll(err.read)
        return Outcome(status: ChildSpawn.waitForExit(pid), stdout: stdout, stderr: stderr)
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
