import Glibc
import Testing
import TouchstonePOSIX

/// Errno keeps the code, reads like strerror, and can be caught by name.
@Suite("Errno")
struct ErrnoTests {
    @Test("the code is kept and the description is the C library's", arguments: [
        (Errno.noSuchFileOrDirectory, ENOENT, "No such file or directory"),
        (.interrupted, EINTR, "Interrupted system call"),
        (.fileExists, EEXIST, "File exists"),
        (.connectionRefused, ECONNREFUSED, "Connection refused"),
    ])
    func codeAndDescription(error: Errno, code: CInt, text: String) {
        #expect(error.rawValue == code)
        #expect(Errno(rawValue: code) == error)
        #expect(error.description == text)
        #expect("\(error)" == text)
    }

    @Test("catch Errno.x matches in untyped code, and only that code")
    func catchByName() {
        func fail(_ error: Errno) throws { throw error }
        var caught = ""
        do {
            try fail(.noSuchFileOrDirectory)
        } catch Errno.fileExists {
            caught = "exists"
        } catch Errno.noSuchFileOrDirectory {
            caught = "missing"
        } catch {
            caught = "other"
        }
        #expect(caught == "missing")
    }

    @Test("a failed system call throws its errno")
    func failedCallThrows() {
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try valueOrErrno(retryOnInterrupt: true) { open("/nonexistent/touchstone-posix-test", O_RDONLY) }
        }
        #expect(throws: Errno.noSuchFileOrDirectory) {
            _ = try OwnedDescriptor.open("/nonexistent/touchstone-posix-test", O_RDONLY)
        }
    }

    @Test("a child that cannot start: SpawnError keeps the Errno and reads like before")
    func spawnError() {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        do {
            let pid = try ChildSpawn.start("/nonexistent/touchstone-child", [], actions: &actions)
            Issue.record("started pid \(pid)")
        } catch {
            #expect(error.errno == .noSuchFileOrDirectory)
            #expect(error.description == "cannot run /nonexistent/touchstone-child: No such file or directory")
        }
    }

    @Test("exit statuses: the code, or 128 + the signal")
    func exitStatus() throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        let exits = try ChildSpawn.start("/bin/sh", ["-c", "exit 3"], actions: &actions)
        #expect(ChildSpawn.waitForExit(exits) == 3)
        let killed = try ChildSpawn.start("/bin/sh", ["-c", "kill -9 $$"], actions: &actions)
        #expect(ChildSpawn.waitForExit(killed) == 128 + SIGKILL)
    }
}
