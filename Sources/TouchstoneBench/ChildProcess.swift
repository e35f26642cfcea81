import Foundation
import TouchstonePOSIX
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
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out.write.rawValue, 1)
        posix_spawn_file_actions_adddup2(&actions, err.write.rawValue, 2)
        let spawned = Result { () throws(SpawnError) in
            try ChildSpawn.start(executable, arguments, actions: &actions, environment: environment)
        }
        // The parent's copies of the write ends must go, or EOF never comes.
        let stdoutPipe = out.keepingRead()
        let stderrPipe = err.keepingRead()
        let pid: pid_t
        do { pid = try spawned.get() } catch { throw BenchError.setup("\(error)") }
        // Outputs are small (a key, a digest, a warning): reading one pipe to
        // its end before the other cannot fill the other's buffer.
        let stdout = readAll(stdoutPipe)
        let stderr = readAll(stderrPipe)
        return Outcome(status: ChildSpawn.waitForExit(pid), stdout: stdout, stderr: stderr)
    }

    /// A pipe whose ends close on exec (only the dup2'd copies reach the child).
    private static func makePipe() throws -> DescriptorPair {
        do { return try OwnedDescriptor.pipe() } catch { throw BenchError.setup("pipe: \(error)") }
    }

    /// Everything `pipe` gives up to its end (or a read error).
    private static func readAll(_ pipe: borrowing OwnedDescriptor) -> [UInt8] {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = (try? chunk.withUnsafeMutableBytes { bytes in try pipe.read(into: bytes) }) ?? -1
            guard n > 0 else { break }
            result += chunk.prefix(n)
        }
        secureWipe(&chunk)
        return result
    }
}
