#if canImport(Glibc)
import Glibc
#endif

/// A file descriptor this process owns: it is closed exactly once, by
/// `close()` or when the owner goes away, and cannot be copied (a second
/// copy could close it under the first, or close someone else's descriptor
/// that reused its number). `release()` hands the number over to code that
/// takes ownership of it (a C library, a child's file actions, a thread).
package struct OwnedDescriptor: ~Copyable, Sendable {
    /// The descriptor's number, for a system call made while this owner
    /// lives (never to keep: it may be reused once the owner is gone).
    package let rawValue: CInt

    /// Takes ownership of `rawValue`, an open descriptor nobody else closes.
    package init(adopting rawValue: CInt) {
        precondition(rawValue >= 0, "not a descriptor: \(rawValue)")
        self.rawValue = rawValue
    }

    deinit {
        // Nobody to tell of a failure here; EBADF (a double close) stops the process.
        _ = try? Self.close(rawValue)
    }

    /// Closes the descriptor and reports the kernel's error (EIO on some
    /// file systems). Never retried on EINTR: on Linux the descriptor is
    /// gone whatever close returned, and a second close could hit another's.
    package consuming func close() throws(Errno) {
        let raw = rawValue
        discard self
        try Self.close(raw)
    }

    /// Gives up ownership without closing: the caller now owns the number.
    package consuming func release() -> CInt {
        let raw = rawValue
        discard self
        return raw
    }

    private static func close(_ raw: CInt) throws(Errno) {
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.close(raw) }
    }
}

/// The two ends of a pipe (`OwnedDescriptor.pipe()`). Frozen, so that
/// callers may take the ends apart (`let reader = pair.read`).
@frozen
package struct DescriptorPair: ~Copyable, Sendable {
    package var read: OwnedDescriptor
    package var write: OwnedDescriptor

    /// The read end; the write end is closed (a child has its copy).
    package consuming func keepingRead() -> OwnedDescriptor {
        _ = consume write
        return read
    }

    /// The write end; the read end is closed (a child has its copy).
    package consuming func keepingWrite() -> OwnedDescriptor {
        _ = consume read
        return write
    }
}

extension OwnedDescriptor {
    // MARK: Opening

    /// open(2); `O_CLOEXEC` is added (no descriptor of ours leaks into a child).
    package static func open(_ path: String, _ flags: CInt, mode: mode_t = 0) throws(Errno) -> OwnedDescriptor {
        OwnedDescriptor(adopting: try valueOrErrno(retryOnInterrupt: true) { Glibc.open(path, flags | O_CLOEXEC, mode) })
    }

    /// socket(2); `SOCK_CLOEXEC` is added.
    package static func socket(_ domain: CInt, _ type: CInt, _ protocol: CInt = 0) throws(Errno) -> OwnedDescriptor {
        let type = type | CInt(SOCK_CLOEXEC.rawValue)
        return OwnedDescriptor(adopting: try valueOrErrno(retryOnInterrupt: false) { Glibc.socket(domain, type, `protocol`) })
    }

    /// A pipe whose two ends close on exec: only copies a child's file
    /// actions dup2 onto its standard streams reach it. (pipe2 does not
    /// import, so FD_CLOEXEC is set right after pipe(); ChildSpawn marks
    /// every descriptor close-on-exec before it spawns anyway.)
    package static func pipe() throws(Errno) -> DescriptorPair {
        var fds: [CInt] = [-1, -1]
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.pipe(&fds) }
        let pair = DescriptorPair(read: OwnedDescriptor(adopting: fds[0]), write: OwnedDescriptor(adopting: fds[1]))
        try pair.read.setCloseOnExec()
        try pair.write.setCloseOnExec()
        return pair
    }

    // MARK: Calls on the descriptor

    /// Sets FD_CLOEXEC.
    package borrowing func setCloseOnExec() throws(Errno) {
        let raw = rawValue
        let flags = try valueOrErrno(retryOnInterrupt: true) { fcntl(raw, F_GETFD) }
        _ = try valueOrErrno(retryOnInterrupt: true) { fcntl(raw, F_SETFD, flags | FD_CLOEXEC) }
    }

    /// read(2) into `buffer`: the count read, 0 at the end.
    package borrowing func read(into buffer: UnsafeMutableRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) -> Int {
        let raw = rawValue
        return try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { Glibc.read(raw, buffer.baseAddress, buffer.count) }
    }

    /// write(2) of `bytes`: the count written (possibly short).
    package borrowing func write(_ bytes: UnsafeRawBufferPointer, retryOnInterrupt: Bool = true) throws(Errno) -> Int {
        let raw = rawValue
        return try valueOrErrno(retryOnInterrupt: retryOnInterrupt) { Glibc.write(raw, bytes.baseAddress, bytes.count) }
    }

    /// Writes every byte of `bytes` (short writes continued, EINTR retried).
    package borrowing func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var at = 0
        while at < bytes.count {
            at += try write(UnsafeRawBufferPointer(rebasing: bytes[at...]))
        }
    }

    /// send(2) of `bytes` with `flags`: the count sent (possibly short).
    package borrowing func send(_ bytes: UnsafeRawBufferPointer, flags: CInt) throws(Errno) -> Int {
        let raw = rawValue
        return try valueOrErrno(retryOnInterrupt: true) { Glibc.send(raw, bytes.baseAddress, bytes.count, flags) }
    }

    /// connect(2) to `address` (retried after EINTR would report EALREADY
    /// or EISCONN, so an interrupted connect is thrown as it is).
    package borrowing func connect(_ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(Errno) {
        let raw = rawValue
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.connect(raw, address, length) }
    }

    /// bind(2) to `address`.
    package borrowing func bind(_ address: UnsafePointer<sockaddr>, _ length: socklen_t) throws(Errno) {
        let raw = rawValue
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.bind(raw, address, length) }
    }

    /// listen(2).
    package borrowing func listen(backlog: CInt) throws(Errno) {
        let raw = rawValue
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.listen(raw, backlog) }
    }

    /// accept(2): the connection, close-on-exec (accept4 does not import:
    /// set right after, so a child spawned meanwhile on another thread could
    /// inherit it; ChildSpawn marks every descriptor before it spawns).
    /// EINTR retried; ECONNABORTED and the rest thrown.
    package borrowing func accept() throws(Errno) -> OwnedDescriptor {
        let raw = rawValue
        let connection = OwnedDescriptor(adopting: try valueOrErrno(retryOnInterrupt: true) { Glibc.accept(raw, nil, nil) })
        try connection.setCloseOnExec()
        return connection
    }

    /// shutdown(2): `SHUT_RD`, `SHUT_WR` or `SHUT_RDWR`.
    package borrowing func shutdown(_ how: Int) throws(Errno) {
        let raw = rawValue
        _ = try valueOrErrno(retryOnInterrupt: false) { Glibc.shutdown(raw, CInt(how)) }
    }

    /// setsockopt(2) of one value.
    package borrowing func setOption<Value: BitwiseCopyable>(_ level: CInt, _ name: CInt, _ value: Value) throws(Errno) {
        let raw = rawValue
        _ = try withUnsafeBytes(of: value) { (bytes) throws(Errno) in
            try valueOrErrno(retryOnInterrupt: false) { setsockopt(raw, level, name, bytes.baseAddress, socklen_t(bytes.count)) }
        }
    }
}
