import Foundation
internal import CProcess
import Synchronization
import TouchstonePOSIX
#if canImport(Glibc)
import Glibc
#endif

/// Names another user's program by its executable for touchstoned, which
/// runs as its own user: the kernel shows `/proc/PID/exe` of another
/// user's process only to a holder of CAP_SYS_PTRACE. Given that
/// capability (the unit's AmbientCapabilities=), the daemon spawns this
/// namer (`touchstoned --name-programs`), which keeps it, then drops every
/// capability of its own: what could read or write any process's memory
/// stays in a process that only takes a pidfd over a socket and answers
/// the path of that process's executable. Without the capability (or as
/// root, which reads it anyway) there is no namer.
package final class ProgramNamer: Sendable {
    private let socket: Mutex<OwnedDescriptor>
    /// The namer's pid.
    package let pid: Int32

    private init(socket: consuming OwnedDescriptor, pid: pid_t) {
        self.socket = Mutex(socket)
        self.pid = pid
    }

    deinit {
        kill(pid, SIGTERM)
        _ = ChildSpawn.waitForExit(pid)
    }

    /// CAP_SYS_PTRACE (linux/capability.h).
    static let sysPtrace: Int32 = 19

    /// At the daemon's start, before any other thread or child: with
    /// CAP_SYS_PTRACE and not root, starts the namer (`executable
    /// --name-programs`) and drops every capability of this process's.
    /// Nil when there is nothing to do; throws what went wrong otherwise
    /// (the daemon does not start with a capability it failed to drop).
    package static func startIfPrivileged(executable: String) throws(ProgramNamerFailure) -> ProgramNamer? {
        guard geteuid() != 0, ts_capability_effective(sysPtrace) == 1 else { return nil }
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw ProgramNamerFailure("socketpair: \(Errno(rawValue: errno))")
        }
        let ours = OwnedDescriptor(adopting: ends[0])
        let theirs = OwnedDescriptor(adopting: ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, theirs.rawValue, 3)
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        let pid: pid_t
        do {
            pid = try ChildSpawn.start(executable, ["--name-programs"], actions: &actions, environment: [:], inheritedBelow: 4)
        } catch {
            throw ProgramNamerFailure("cannot start the program namer: \(error)")
        }
        _ = consume theirs
        // capset acts on the calling thread: every thread of the process
        // must have none left (there should be no other yet).
        guard ts_drop_all_capabilities() == 0, ts_capability_effective(sysPtrace) == 0, noThreadHoldsCapabilities() else {
            kill(pid, SIGKILL)
            _ = ChildSpawn.waitForExit(pid)
            throw ProgramNamerFailure("cannot drop the daemon's capabilities: \(Errno(rawValue: errno))")
        }
        try? ours.setOption(SOL_SOCKET, SO_RCVTIMEO, timeval(tv_sec: 2, tv_usec: 0))
        return ProgramNamer(socket: ours, pid: pid)
    }

    /// Whether every thread of this process has empty capability sets
    /// (/proc/self/task/*/status: CapEff, CapPrm, CapAmb all zero).
    static func noThreadHoldsCapabilities() -> Bool {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return false }
        for task in tasks {
            guard let status = try? String(contentsOfFile: "/proc/self/task/\(task)/status", encoding: .utf8) else { continue }
            for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") || line.hasPrefix("CapPrm:") || line.hasPrefix("CapAmb:") {
                guard line.split(separator: "\t").last.map({ $0.allSatisfy { $0 == "0" } }) == true else { return false }
            }
        }
        return true
    }

    /// The executable of the process `pidfd` refers to, as the namer read
    /// it; nil when it could not (the process went, the namer went, or it
    /// took longer than 2 s). One question at a time.
    package func executable(ofPIDFD pidfd: Int32) -> String? {
        socket.withLock { socket -> String? in
            guard ts_send_descriptor(socket.rawValue, pidfd) == 0 else { return nil }
            var reply = [UInt8](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = reply.withUnsafeMutableBytes { recv(socket.rawValue, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return nil }
            // A first byte 1: found; 0: not (the rest is empty).
            guard reply[0] == 1 else { return nil }
            return String(decoding: reply[1..<count], as: UTF8.self)
        }
    }

    /// `touchstoned --name-programs`: answers each pidfd on descriptor 3
    /// with the path of that process's executable, checked to be that
    /// process's (it still lives after the read), until the daemon closes
    /// the socket. Keeps CAP_SYS_PTRACE alone, gains nothing after.
    package static func serve() -> Never {
        if ts_keep_only_capability(sysPtrace) != 0 { _exit(2) }
        let socket: Int32 = 3
        while true {
            let pidfd = ts_receive_descriptor(socket)
            if pidfd == -1 { _exit(0) }
            var answer: [UInt8] = [0]
            if pidfd >= 0 {
                let process = OwnedDescriptor(adopting: pidfd)
                if let pid = PeerProgram.livePID(of: process.rawValue), let path = PeerProgram.readLink("/proc/\(pid)/exe"),
                   PeerProgram.livePID(of: process.rawValue) == pid {
                    answer = [1] + Array(path.utf8.prefix(Int(PATH_MAX)))
                }
            }
            _ = answer.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
    }
}

/// Why the program namer could not be set up.
package struct ProgramNamerFailure: Error, Sendable, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
