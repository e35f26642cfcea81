import Glibc

/// The program on the other end of a connection, named as the kernel knows
/// it: its executable (`/proc/PID/exe`), then its command name (`comm`,
/// which a process sets for itself: any program can call itself `ssh`).
///
/// The executable is read only where the kernel lets this process read
/// it: a process of the same user, or any process for root or a holder of
/// CAP_SYS_PTRACE. Otherwise only the command name is known, and the
/// description says it is the program's own.
package struct PeerProgram: Sendable, Equatable, CustomStringConvertible {
    package let pid: pid_t
    /// `/proc/PID/exe` as the kernel resolves it; nil when it may not be
    /// read or the process is gone.
    package let executable: String?
    /// `/proc/PID/comm`; nil when the process is gone.
    package let command: String?

    package init(pid: pid_t, executable: String?, command: String?) {
        self.pid = pid
        self.executable = executable.map(Self.printable)
        self.command = command.map(Self.printable)
    }

    /// "/usr/bin/ssh-add (ssh-add, pid 42)"; without the executable,
    /// "ssh-add (pid 42, a name it gave itself)".
    package var description: String {
        switch (executable, command) {
        case let (executable?, command?): "\(executable) (\(command), pid \(pid))"
        case let (executable?, nil): "\(executable) (pid \(pid))"
        case let (nil, command?): "\(command) (pid \(pid), a name it gave itself)"
        case (nil, nil): "a process that is gone (pid \(pid))"
        }
    }

    /// Names process `pid`. `pidfd`, a pidfd of it (SO_PEERPIDFD), proves
    /// the names are that process's: they are kept only if it still lives
    /// after they were read (a pid the kernel gave to another process
    /// since reads as gone). Without one, its start time is compared
    /// before and after instead. `namer`: asked for the executable, with
    /// the pidfd, when this process may not read it itself (touchstoned's
    /// program namer, which has the capability this process dropped).
    package static func named(pid: pid_t, pidfd: Int32?, namer: (@Sendable (Int32) -> String?)? = nil) -> PeerProgram {
        guard pid > 0 else { return PeerProgram(pid: pid, executable: nil, command: nil) }
        let started = pidfd == nil ? startTime(of: pid) : nil
        var executable = readLink("/proc/\(pid)/exe")
        if executable == nil, let pidfd, let namer { executable = namer(pidfd) }
        let command = readSmallFile("/proc/\(pid)/comm").map { text in
            String(text.drop { $0 == " " }.reversed().drop { $0 == "\n" || $0 == " " }.reversed())
        }
        let same: Bool
        if let pidfd {
            same = livePID(of: pidfd) == pid
        } else {
            same = started != nil && startTime(of: pid) == started
        }
        guard same else { return PeerProgram(pid: pid, executable: nil, command: nil) }
        return PeerProgram(pid: pid, executable: executable, command: command)
    }

    /// The pid a pidfd refers to while that process lives (its fdinfo's
    /// `Pid:`; -1 once it exited).
    package static func livePID(of pidfd: Int32) -> pid_t? {
        guard let info = readSmallFile("/proc/self/fdinfo/\(pidfd)"),
              let line = info.split(separator: "\n").first(where: { $0.hasPrefix("Pid:") }),
              let value = line.split(whereSeparator: { $0 == "\t" || $0 == " " }).last.flatMap({ pid_t($0) }),
              value > 0 else { return nil }
        return value
    }

    /// Field 22 of /proc/PID/stat (clock ticks after boot), after the
    /// command in parentheses, which may itself hold spaces and parentheses.
    static func startTime(of pid: pid_t) -> UInt64? {
        guard let stat = readSmallFile("/proc/\(pid)/stat"),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state); field 22 is fields[19].
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }

    /// A /proc file's text (at most 4 KiB), or nil when it cannot be read.
    private static func readSmallFile(_ path: String) -> String? {
        guard let file = try? OwnedDescriptor.open(path, O_RDONLY | O_CLOEXEC) else { return nil }
        var bytes = [UInt8](repeating: 0, count: 4096)
        var length = 0
        while length < bytes.count {
            let count = bytes.withUnsafeMutableBytes { buffer in
                (try? file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[length...]))) ?? -1
            }
            if count < 0 { return nil }
            if count == 0 { break }
            length += count
        }
        return String(decoding: bytes[..<length], as: UTF8.self)
    }

    package static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink(path, &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A name as it may be shown on one line: control characters become
    /// `?`, and it is at most 256 characters.
    private static func printable(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.prefix(256).map {
            $0.value < 0x20 || $0.value == 0x7f || (0x80..<0xa0).contains($0.value) ? "?" : $0
        }))
    }
}

extension OwnedDescriptor {
    /// A pidfd of the process on the other end of this Unix socket
    /// (SO_PEERPIDFD, Linux 6.5 and later), or nil where the kernel has none.
    package borrowing func peerPIDFD() -> OwnedDescriptor? { unixPeerPIDFD(of: rawValue) }
}

/// A pidfd of the process on the other end of Unix socket `fd`
/// (SO_PEERPIDFD, Linux 6.5 and later), or nil where the kernel has none.
package func unixPeerPIDFD(of fd: Int32) -> OwnedDescriptor? {
    let soPeerPIDFD: Int32 = 77  // <asm-generic/socket.h>, newer than Debian 12's headers
    var pidfd: Int32 = -1
    var size = socklen_t(MemoryLayout<Int32>.size)
    guard getsockopt(fd, SOL_SOCKET, soPeerPIDFD, &pidfd, &size) == 0, pidfd >= 0 else { return nil }
    return OwnedDescriptor(adopting: pidfd)
}
