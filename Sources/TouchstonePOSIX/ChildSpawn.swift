#if canImport(Glibc)
import Glibc
#endif

/// A child process that did not start: the program, and the C library's
/// reason (posix_spawn's error number; ENOENT for a missing program).
package struct SpawnError: Error, Sendable, Hashable, CustomStringConvertible {
    package let executable: String
    package let errno: Errno

    package init(executable: String, errno: Errno) {
        self.executable = executable
        self.errno = errno
    }

    /// "cannot run /usr/bin/x: No such file or directory".
    package var description: String { "cannot run \(executable): \(errno)" }
}

/// posix_spawn with the settings every child of Touchstone needs: no signal
/// blocked and default handlers (the caller may be a Dispatch worker that
/// blocks them all, and a child inheriting that mask would ignore SIGTERM),
/// no inherited descriptor above stderr unless a file action maps it, and an
/// optional new session (no controlling terminal). Used by the simulator
/// (swtpm and its tools), the Secret Service's pinentry, the benchmark and
/// the end-to-end tests.
package enum ChildSpawn {
    /// Starts `executable` with `arguments` (argv[0] is added), the file
    /// actions the caller set up, and `environment` (nil: this process's).
    /// `inheritedBelow`: the child keeps descriptors below it (0-2, and
    /// those the caller's actions map there); every other one is closed
    /// in the child.
    package static func start(_ executable: String, _ arguments: [String], actions: inout posix_spawn_file_actions_t,
                              environment: [String: String]? = nil, newSession: Bool = false,
                              inheritedBelow: Int32 = 3) throws(SpawnError) -> pid_t {
        try start(executable, bytes: arguments.map { Array($0.utf8) }, actions: &actions,
                  environment: environment, newSession: newSession, inheritedBelow: inheritedBelow)
    }

    /// The same with each argument given as its bytes, which need not be
    /// UTF-8 (argv is bytes: the end-to-end tests pass undecodable ones).
    package static func start(_ executable: String, bytes arguments: [[UInt8]], actions: inout posix_spawn_file_actions_t,
                              environment: [String: String]? = nil, newSession: Bool = false,
                              inheritedBelow: Int32 = 3) throws(SpawnError) -> pid_t {
        // Closed in the child, after the caller's actions: also a descriptor
        // another thread opens while this one spawns (a TSS socket, a pipe).
        // Without closefrom (a C library before 2.34), marked close-on-exec
        // here instead, which such a descriptor can slip past.
        if let addCloseFrom { _ = addCloseFrom(&actions, inheritedBelow) } else { markDescriptorsCloseOnExec() }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        let setsid: Int32 = newSession ? 0x80 : 0  // POSIX_SPAWN_SETSID (glibc), a macro Swift does not import
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | setsid))

        let argv: [UnsafeMutablePointer<CChar>?] = ([Array(executable.utf8)] + arguments).map { bytes in
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: bytes.count + 1)
            for (i, byte) in bytes.enumerated() { copy[i] = CChar(bitPattern: byte) }
            copy[bytes.count] = 0
            return copy
        } + [nil]
        defer { argv.forEach { $0?.deallocate() } }
        let envp: [UnsafeMutablePointer<CChar>?]? = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        // posix_spawn returns its error number rather than setting errno.
        let rc = envp.map { e in e.withUnsafeBufferPointer { posix_spawn(&pid, executable, &actions, &attributes, argv, $0.baseAddress) } }
            ?? ProcessEnvironment.reading { posix_spawn(&pid, executable, &actions, &attributes, argv, environ) }
        guard rc == 0 else { throw SpawnError(executable: executable, errno: Errno(rawValue: rc)) }
        return pid
    }

    /// Starts `executable` talking through pipes: its stdin is `input`'s
    /// other end, its stdout `output`'s, its stderr /dev/null; nothing else
    /// of this process's reaches it.
    package static func startPiped(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                                   newSession: Bool = false) throws(SpawnError) -> PipedChild {
        let toChild: DescriptorPair
        do { toChild = try OwnedDescriptor.pipe() } catch { throw SpawnError(executable: executable, errno: error) }
        let fromChild: DescriptorPair
        do { fromChild = try OwnedDescriptor.pipe() } catch { throw SpawnError(executable: executable, errno: error) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild.read.rawValue, 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild.write.rawValue, 1)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let pid = try start(executable, arguments, actions: &actions, environment: environment, newSession: newSession)
        // Our ends; the child's close here.
        return PipedChild(pid: pid, input: toChild.keepingWrite(), output: fromChild.keepingRead())
    }

    /// Waits for `pid` and returns its exit status, or 128 + the signal that
    /// killed it (WIFEXITED / WEXITSTATUS are macros: decoded by hand). A pid
    /// that is not this process's child (ECHILD) reads as 0.
    package static func waitForExit(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        _ = try? valueOrErrno(retryOnInterrupt: true) { waitpid(pid, &status, 0) }
        return exitStatus(status)
    }

    /// The exit status of a raw wait status.
    package static func exitStatus(_ status: Int32) -> Int32 {
        status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    }

    /// glibc's posix_spawn_file_actions_addclosefrom_np (2.34 and later),
    /// which Swift does not import: found at run time; nil on an older C
    /// library, where the marking below is what there is.
    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
    private static let addCloseFrom: AddCloseFrom? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// Sets FD_CLOEXEC on every descriptor above stderr (the TSS's sockets,
    /// Foundation's pipes), so a spawned child inherits none of them.
    static func markDescriptorsCloseOnExec() {
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let listing = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard let fd = Int32(name), fd > 2, fd != listing else { continue }
            // Another thread may close a descriptor between the listing and
            // here: EBADF is no bug then, and nothing to mark.
            guard let flags = try? valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true, { fcntl(fd, F_GETFD) })
            else { continue }
            _ = try? valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true) { fcntl(fd, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}

/// A child started by `ChildSpawn.startPiped`: its pid, the write end of
/// its stdin and the read end of its stdout.
@frozen package struct PipedChild: ~Copyable {
    package let pid: pid_t
    package var input: OwnedDescriptor
    package let output: OwnedDescriptor
}
