import Foundation
import Glibc
import Testing
import TouchstonePOSIX

/// What a child started by `ChildSpawn` inherits: 0-2 and what the
/// caller's file actions map below `inheritedBelow`, nothing else.
@Suite("ChildSpawn: the descriptors a child gets")
struct ChildSpawnTests {
    /// Runs `script` under /bin/sh with /dev/null on descriptor 3 (a file
    /// action) and `inheritedBelow`; its exit status.
    static func run(_ script: String, inheritedBelow: Int32) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 3, "/dev/null", O_RDONLY, 0)
        let pid = try ChildSpawn.start("/bin/sh", ["-c", script], actions: &actions, inheritedBelow: inheritedBelow)
        return ChildSpawn.waitForExit(pid)
    }

    @Test("a descriptor the actions map to 3 reaches the child when it inherits below 4, and is closed in it by default (closed after the actions, so one another thread opens meanwhile is too); a pipe of this process's reaches it in neither case")
    func inheritedDescriptors() throws {
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)  // without O_CLOEXEC, as a library might open one
        defer { close(ends[0]); close(ends[1]) }
        let pipeAbsent = "! test -e /proc/$$/fd/\(ends[0]) && ! test -e /proc/$$/fd/\(ends[1])"
        #expect(try Self.run("test -e /proc/$$/fd/3 && \(pipeAbsent)", inheritedBelow: 4) == 0, "fd 3 kept, the pipe not")
        #expect(try Self.run("! test -e /proc/$$/fd/3 && \(pipeAbsent)", inheritedBelow: 3) == 0, "fd 3 closed, the pipe not there")
    }

    @Test("children spawned with this process's environment start while another thread adds variables to it (each new name grows the array environ points to): none fails with EFAULT, every one exits 0")
    func spawnWhileTheEnvironmentGrows() throws {
        let names = (0..<400).map { "TOUCHSTONE_TEST_SPAWN_ENV_\($0)" }
        let growing = Thread {
            for name in names { ProcessEnvironment.set(name, "x") }
        }
        growing.start()
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        var failures: [String] = []
        for _ in 0..<150 {
            do {
                let pid = try ChildSpawn.start("/bin/true", [], actions: &actions)
                let status = ChildSpawn.waitForExit(pid)
                if status != 0 { failures.append("exit \(status)") }
            } catch {
                failures.append("\(error)")
            }
        }
        while ProcessEnvironment.value(names[names.count - 1]) == nil { usleep(1_000) }
        #expect(failures.isEmpty, "\(failures.prefix(5))")
        // The names stay (never removed: see ProcessEnvironment), emptied.
        for name in names { ProcessEnvironment.set(name, "") }
        #expect(ProcessEnvironment.value(names[0]) == "")
    }
}
