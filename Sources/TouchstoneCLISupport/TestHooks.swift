import Glibc
import TouchstonePOSIX

/// Hooks for the test suite, driven by the environment. Each only changes
/// *when* the process runs, never what it reads, writes or keeps.
package enum TestHooks {
    /// `TOUCHSTONE_TEST_STOP_BEFORE_EXIT=1`: the process stops itself
    /// (SIGSTOP) after the command has finished (its output written, the
    /// device closed, every buffer of the command released) and just before
    /// `exit`, so a test can read its memory through /proc/PID/mem and look
    /// for secrets left behind (Tests/CLITests/MemoryScanTests.swift and
    /// GitCredentialMemoryTests.swift, by touchstone-cli and git-credential-touchstone;
    /// docs/reliability.md "Secrets in memory"). SIGCONT lets it exit.
    ///
    /// It cannot leak anything: it only waits and stops. Reading a process's
    /// memory needs ptrace rights over it (the same user, and under Yama
    /// ptrace_scope 1 its parent, which set the variable and can read the
    /// running process just as well); a stopped process grants no more than
    /// a running one. Any value other than `1` is ignored.
    package static func stopBeforeExitIfAsked() {
        guard let value = getenv("TOUCHSTONE_TEST_STOP_BEFORE_EXIT"), strcmp(value, "1") == 0 else { return }
        waitUntilOtherThreadsIdle()
        raise(SIGSTOP)
    }

    /// The command's task has returned, but the worker thread that ran it
    /// may still be releasing what it held (a finished task's result and
    /// captures are freed by that thread, after the caller has resumed):
    /// wait until no other thread is running (state R in
    /// /proc/self/task/TID/stat) on two looks in a row 5 ms apart, at most
    /// one second.
    private static func waitUntilOtherThreadsIdle() {
        let me = currentThreadID()
        var quietLooks = 0
        for _ in 0..<200 where quietLooks < 2 {
            quietLooks = anyOtherThreadRunning(except: me) ? 0 : quietLooks + 1
            usleep(5_000)
        }
    }

    /// This thread's id: /proc/thread-self links to "PID/task/TID".
    private static func currentThreadID() -> pid_t {
        var link = [CChar](repeating: 0, count: 64)
        let n = readlink("/proc/thread-self", &link, link.count - 1)
        guard n > 0 else { return -1 }
        let text = String(decoding: link[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.split(separator: "/").last.flatMap { pid_t($0) } ?? -1
    }

    private static func anyOtherThreadRunning(except me: pid_t) -> Bool {
        guard let directory = opendir("/proc/self/task") else { return false }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = pid_t(name), tid != me else { continue }
            guard let stat = try? OwnedDescriptor.open("/proc/self/task/\(tid)/stat", O_RDONLY) else { continue }
            var buffer = [UInt8](repeating: 0, count: 512)
            let n = (try? buffer.withUnsafeMutableBytes { bytes in try stat.read(into: bytes) }) ?? -1
            // "TID (comm) S ...": the state is the first field after the last ')'.
            guard n > 0, let paren = buffer[..<n].lastIndex(of: UInt8(ascii: ")")), paren + 2 < n else { continue }
            if buffer[paren + 2] == UInt8(ascii: "R") { return true }
        }
        return false
    }
}
