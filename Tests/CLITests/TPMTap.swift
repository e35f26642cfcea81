import Foundation
import TouchstoneSimulator
import Glibc
import TouchstoneTPM

/// A man in the middle on the simulator's TPM command socket that kills
/// swtpm (SIGKILL, no TPM2_Shutdown: a crash) at one chosen TPM command,
/// so a test can say exactly where in an operation the TPM died.
///
/// swtpm's socket `sim/tpm/sock` is renamed aside (swtpm keeps listening on
/// it) and the tap listens at the old path; the swtpm TCTI connects anew for
/// each command, so every command passes through here. Commands are
/// forwarded unchanged, counted by command code, until the chosen one:
/// `.beforeTPM`: swtpm is killed as the command arrives (it never runs);
/// `.afterTPM`: the command runs (its NV writes are on disk) and swtpm is
/// killed before the response reaches the client. Either way the client's
/// connection is then closed. The control socket is untouched.
///
/// Runs on a thread of its own (blocking socket calls), never on a Swift
/// concurrency thread.
final class TPMTap: @unchecked Sendable {
    enum Moment { case beforeTPM, afterTPM }

    /// TPM command codes (TPM 2.0 Part 2, TPM_CC).
    static let unseal: UInt32 = 0x15E
    static let objectChangeAuth: UInt32 = 0x150
    static let nvChangeAuth: UInt32 = 0x13B
    static let flushContext: UInt32 = 0x165
    static let create: UInt32 = 0x153
    static let nvIncrement: UInt32 = 0x134
    static let nvRead: UInt32 = 0x14E
    static let nvReadPublic: UInt32 = 0x169
    static let sign: UInt32 = 0x15D

    let swtpm: Swtpm
    let target: UInt32
    let occurrence: Int
    let moment: Moment
    private let asidePath: String
    private var listener: Int32 = -1
    private let lock = NSLock()
    private var stopping = false
    private var _seen: [UInt32] = []
    private var _killed = false
    private var thread: Thread?

    /// The command codes that passed so far, the killing one included.
    var seen: [UInt32] { lock.withLock { _seen } }
    /// Whether the tap killed swtpm.
    var killed: Bool { lock.withLock { _killed } }

    /// Kills swtpm at the `occurrence`-th (from 1) command `target`.
    init(simulatorHome home: String, target: UInt32, occurrence: Int = 1, moment: Moment) throws {
        swtpm = Swtpm(directory: home + "/sim/tpm")
        self.target = target
        self.occurrence = occurrence
        self.moment = moment
        asidePath = swtpm.socketPath + ".swtpm"
        guard rename(swtpm.socketPath, asidePath) == 0 else { throw TapFailure("rename: errno \(errno)") }
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0, bind(listener, swtpm.socketPath) == 0, listen(listener, 8) == 0 else {
            throw TapFailure("cannot listen on \(swtpm.socketPath): errno \(errno)")
        }
        let thread = Thread { [self] in serve() }
        self.thread = thread
        thread.start()
    }

    /// Stops listening and puts swtpm's socket file back where it was: the
    /// state a crashed swtpm leaves behind (its pid file, its socket files,
    /// no process), which `sim start` must cope with.
    func stop() {
        lock.withLock { stopping = true }
        while thread?.isFinished == false { usleep(5_000) }
        thread = nil  // the thread's closure held the tap: break the cycle (LeakSanitizer)
        close(listener)
        unlink(swtpm.socketPath)
        rename(asidePath, swtpm.socketPath)
    }

    private var isStopping: Bool { lock.withLock { stopping || _killed } }

    private func serve() {
        while !isStopping {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, 50) > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            relay(client)
            close(client)
        }
    }

    /// Relays one client connection, command by command.
    private func relay(_ client: Int32) {
        let upstream = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        defer { close(upstream) }
        guard upstream >= 0, connect(upstream, asidePath) == 0 else { return }
        while !isStopping, let command = readMessage(client) {
            let code = command[6..<10].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            let hit = lock.withLock { () -> Bool in
                _seen.append(code)
                return code == target && _seen.filter { $0 == target }.count == occurrence
            }
            if hit && moment == .beforeTPM { crash(); return }
            guard writeAll(upstream, command), let response = readMessage(upstream) else { return }
            if hit { crash(); return }
            guard writeAll(client, response) else { return }
        }
    }

    private func crash() {
        if let pid = swtpm.pid {
            kill(pid, SIGKILL)
            while swtpm.pid != nil { usleep(2_000) }
        }
        lock.withLock { _killed = true }
    }

    // MARK: - Socket helpers

    private func bind(_ fd: Int32, _ path: String) -> Int32 {
        withAddress(path) { Glibc.bind(fd, $0, $1) }
    }

    private func connect(_ fd: Int32, _ path: String) -> Int32 {
        withAddress(path) { Glibc.connect(fd, $0, $1) }
    }

    /// `path` as a unix socket address, for bind or connect.
    private func withAddress(_ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in path.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// One TPM command or response: a 10-byte header whose bytes 2..<6 are
    /// the total size, then the rest. Nil at EOF or on an error.
    private func readMessage(_ fd: Int32) -> [UInt8]? {
        guard let header = readExactly(fd, 10) else { return nil }
        let size = Int(header[2..<6].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
        guard size >= 10, size <= 1 << 16 else { return nil }
        guard let rest = readExactly(fd, size - 10) else { return nil }
        return header + rest
    }

    private func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, count - done) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return buffer
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + done, bytes.count - done, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }
}

struct TapFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
