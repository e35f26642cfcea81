internal import CSeccomp
import TouchstonePOSIX
#if canImport(Glibc)
import Glibc
#endif

/// What the print checker may still do once it has read its input: a
/// seccomp filter (built with libseccomp) that allows what a print's
/// deserialization and serialization need, measured with strace
/// (docs/daemon.md, "The print checker"): memory, reading its stdin,
/// writing its stdout and stderr, locks and time, ending. Opening a file
/// fails with EPERM; any other call (a socket, exec, ptrace, a signal to
/// another process, ...) kills the process.
enum PrintCheckConfinement {
    /// Why the filter could not be entered (the checker then checks
    /// nothing).
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Calls allowed whatever their arguments.
    static let allowed = [
        // Memory (mmap and mprotect below: never executable).
        "brk", "munmap", "mremap", "madvise",
        // Locks, time, randomness, identity.
        "futex", "clock_gettime", "clock_getres", "gettimeofday", "getrandom", "getpid", "gettid", "sched_yield",
        // Signals to itself (abort), their masks, the end.
        "rt_sigprocmask", "rt_sigreturn", "exit", "exit_group",
        // Descriptors it holds: the pipes' state, closing.
        "close", "fstat", "newfstatat",
    ]

    /// Calls refused with EPERM rather than a kill: opening a file, which
    /// libraries may try and do without.
    static let refused = ["open", "openat", "openat2", "creat"]

    /// Enters the filter, after no_new_privs (which an unprivileged
    /// process needs for it, and which keeps a later exec from gaining
    /// privileges). The filter holds for this process for good.
    static func enter() throws(Failure) {
        guard ts_set_no_new_privs() == 0 else { throw Failure(description: "prctl(PR_SET_NO_NEW_PRIVS): \(Errno.current.description)") }
        // Where seccomp(2) itself is filtered (systemd's @system-service
        // lacks it), libseccomp loads through prctl and cannot ask whether
        // the kernel kills whole processes: then the thread is killed,
        // which is the process (the checker runs one thread).
        guard let filter = seccomp_init(ts_scmp_act_kill_process()) ?? seccomp_init(ts_scmp_act_kill_thread()) else {
            throw Failure(description: "seccomp_init failed")
        }
        defer { seccomp_release(filter) }
        let allow = ts_scmp_act_allow()
        for name in allowed { try rule(filter, allow, name) }
        for name in refused { try rule(filter, ts_scmp_act_errno(UInt16(EPERM)), name) }
        // Its own descriptors only: stdin to read, stdout and stderr to write.
        try rule(filter, allow, "read", argument: 0, .equal(0))
        try rule(filter, allow, "write", argument: 0, .equal(1))
        try rule(filter, allow, "write", argument: 0, .equal(2))
        // Memory never executable: no code made from the input.
        try rule(filter, allow, "mmap", argument: 2, .maskedEqual(UInt64(PROT_EXEC), 0))
        try rule(filter, allow, "mprotect", argument: 2, .maskedEqual(UInt64(PROT_EXEC), 0))
        // abort() signals this process only, never another (the daemon runs as the same user).
        try rule(filter, allow, "tgkill", argument: 0, .equal(UInt64(getpid())))
        let loaded = seccomp_load(filter)
        guard loaded == 0 else { throw Failure(description: "seccomp_load: \(Errno(rawValue: -loaded).description)") }
    }

    /// One argument comparison.
    enum Comparison {
        case equal(UInt64)
        case maskedEqual(UInt64, UInt64)
    }

    private static func rule(_ filter: scmp_filter_ctx, _ action: UInt32, _ name: String,
                             argument: UInt32? = nil, _ comparison: Comparison? = nil) throws(Failure) {
        let number = seccomp_syscall_resolve_name(name)
        // A call this architecture does not have (open on arm64): nothing to allow.
        guard number != __NR_SCMP_ERROR else { return }
        let added: Int32 = switch (argument, comparison) {
        case (let index?, .equal(let value)?): ts_scmp_rule_arg(filter, action, number, index, SCMP_CMP_EQ, value, 0)
        case (let index?, .maskedEqual(let mask, let value)?): ts_scmp_rule_arg(filter, action, number, index, SCMP_CMP_MASKED_EQ, mask, value)
        default: seccomp_rule_add_array(filter, action, number, 0, nil)
        }
        guard added == 0 else { throw Failure(description: "seccomp rule for \(name): \(Errno(rawValue: -added).description)") }
    }
}
