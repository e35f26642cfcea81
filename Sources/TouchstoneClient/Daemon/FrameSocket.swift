import FoundationEssentials
import Synchronization
import TouchstonePOSIX
import TouchstoneSecure
#if canImport(Glibc)
import Glibc
#endif

/// One end of a daemon connection: a Unix stream socket that sends and
/// receives `DaemonWire` frames. Sends may come from any thread (one at a
/// time, under a lock); one thread receives.
package final class FrameSocket: Sendable {
    /// The socket, closed when this goes.
    private let descriptor: OwnedDescriptor
    private let sending = Locked(())
    private let isShut = Atomic<Bool>(false)

    /// The socket's number, for a call made while this lives.
    package var fd: Int32 { descriptor.rawValue }

    package init(owning descriptor: consuming OwnedDescriptor) {
        self.descriptor = descriptor
    }

    /// Connects to the daemon listening at `path`.
    package static func connect(to path: String) throws(DaemonWireError) -> FrameSocket {
        let socket: OwnedDescriptor
        do {
            socket = try .unixStreamSocket()
        } catch {
            throw .call("socket", error)
        }
        do {
            try socket.connect(unixSocket: path)
        } catch .fileNameTooLong {
            throw .system("the socket path is longer than 107 bytes")
        } catch {
            throw .system(error.description)
        }
        return FrameSocket(owning: socket)
    }

    /// The peer's pid, uid and gid (SO_PEERCRED): who connected, as the
    /// kernel saw it at connect().
    package func peerCredentials() -> (pid: pid_t, uid: uid_t, gid: gid_t)? { unixPeerCredentials(of: fd) }

    /// Runs `body` with a pidfd of the peer (SO_PEERPIDFD, Linux 6.5 and
    /// later), or nil where the kernel has none; the pidfd is closed after.
    package func withPeerPIDFD<R>(_ body: (Int32?) -> R) -> R {
        guard let owner = unixPeerPIDFD(of: fd) else { return body(nil) }
        return body(owner.rawValue)
    }

    /// Bounds each send: a peer that reads nothing for `deadline` makes
    /// the send fail (`.timedOut`) instead of waiting (SO_SNDTIMEO).
    package func setSendDeadline(_ deadline: Duration) {
        let milliseconds = max(deadline.wholeMilliseconds, 1)
        var limit = timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000)
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one frame whole.
    package func send(_ frame: DaemonWire.Frame) throws(DaemonWireError) {
        let body = try frame.body()
        let failure: DaemonWireError? = sending.withLock { _ in
            body.withUnsafeBytes { raw in
                var length = UInt32(raw.count).bigEndian
                return withUnsafeBytes(of: &length) { write($0) } ?? write(raw)
            }
        }
        if let failure { throw failure }
    }

    /// Writes `bytes` whole; the error, if one stopped it.
    private func write(_ bytes: UnsafeRawBufferPointer) -> DaemonWireError? {
        var at = 0
        while at < bytes.count {
            do {
                at += try valueOrErrno(retryOnInterrupt: true) {
                    Glibc.send(fd, bytes.baseAddress!.advanced(by: at), bytes.count - at, Int32(MSG_NOSIGNAL))
                }
            } catch .resourceTemporarilyUnavailable {
                return .timedOut  // the send deadline passed
            } catch .brokenPipe, .connectionReset {
                return .closed
            } catch {
                return .call("send", error)
            }
        }
        return nil
    }

    /// Receives one frame. Waits for its first byte as long as
    /// `keepWaiting` says (asked every `idle`; nil: forever); then the whole
    /// frame must arrive within `stall` of that byte (a deadline for the
    /// frame, not for each read: a byte now and then keeps nothing open).
    /// The body's locked memory is taken as its bytes arrive, not as its
    /// length announces.
    /// `budget`: the sender's locked memory, taken chunk by chunk as the
    /// body arrives (`.overBudget` when it runs out) and held by the frame.
    package func receive(idle: Duration?, stall: Duration, budget: (any FrameBudget)? = nil,
                         keepWaiting: () -> Bool = { false }) throws(DaemonWireError) -> DaemonWire.Frame {
        while true {
            do {
                try wait(idle)
                break
            } catch .timedOut where keepWaiting() {
                continue
            }
        }
        let deadline = ContinuousClock.now + stall
        var header = [UInt8](repeating: 0, count: 4)
        let got: Result<Void, DaemonWireError> = header.withUnsafeMutableBytes { raw in
            Result { () throws(DaemonWireError) in try read(into: raw, until: deadline) }
        }
        try got.get()
        let length = Int(UInt32(header[0]) << 24 | UInt32(header[1]) << 16 | UInt32(header[2]) << 8 | UInt32(header[3]))
        guard length <= DaemonWire.maximumBody else { throw .tooLarge(length) }
        var chunks: [SecureBytes] = []
        var received = 0
        // Given back if the frame goes (whole or not); kept by it otherwise.
        let hold = budget.map { FrameHold(budget: $0) }
        while received < length {
            let size = min(length - received, Self.chunk)
            if let hold, !hold.take(size) { throw .overBudget(length) }
            let chunk = SecureBytes(count: size)
            let read: Result<Void, DaemonWireError> = chunk.withUnsafeMutableBytes { raw in
                Result { () throws(DaemonWireError) in try self.read(into: raw, until: deadline) }
            }
            try read.get()
            chunks.append(chunk)
            received += chunk.count
        }
        let body = chunks.count == 1 ? chunks[0] : SecureBytes(count: length) { out in
            var at = 0
            for chunk in chunks {
                chunk.withUnsafeBytes { bytes in
                    if bytes.count > 0 { out.baseAddress!.advanced(by: at).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
                }
                at += chunk.count
            }
        }
        var frame = try DaemonWire.Frame.parse(body)
        frame.hold = hold
        return frame
    }

    /// How much of a body is read into one piece of locked memory at a time.
    static let chunk = 64 << 10

    /// Fills `buffer` before `deadline`.
    private func read(into buffer: UnsafeMutableRawBufferPointer, until deadline: ContinuousClock.Instant) throws(DaemonWireError) {
        var at = 0
        while at < buffer.count {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { throw .timedOut }
            try wait(left)
            let n: Int
            do {
                n = try valueOrErrno(retryOnInterrupt: true) { Glibc.read(fd, buffer.baseAddress!.advanced(by: at), buffer.count - at) }
            } catch .resourceTemporarilyUnavailable {
                continue
            } catch .connectionReset {
                throw .closed
            } catch {
                throw .call("read", error)
            }
            if n == 0 { throw .closed }
            at += n
        }
    }

    private func wait(_ limit: Duration?) throws(DaemonWireError) {
        let milliseconds = limit.map { Int32(clamping: max($0.wholeMilliseconds, 1)) } ?? -1
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready: Int32
        do {
            ready = try valueOrErrno(retryOnInterrupt: true) { poll(&poller, 1, milliseconds) }
        } catch {
            throw .call("poll", error)
        }
        if ready == 0 { throw .timedOut }
    }

    /// Ends the connection both ways: a thread blocked in `receive` gets
    /// `.closed`. Idempotent.
    package func shut() {
        guard !isShut.exchange(true, ordering: .relaxed) else { return }
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// Locked memory a peer's frames may hold: taken as their bytes arrive,
/// given back when the frames go.
package protocol FrameBudget: Sendable {
    /// Takes `bytes`; false (nothing taken) when that would pass the budget.
    func take(_ bytes: Int) -> Bool
    func give(_ bytes: Int)
}

/// What one frame took of a budget, given back when it goes.
package final class FrameHold: Sendable {
    private let budget: any FrameBudget
    private let taken = Locked(0)

    package init(budget: any FrameBudget) { self.budget = budget }

    /// Takes `bytes` more for the frame; false when the budget has not them.
    package func take(_ bytes: Int) -> Bool {
        guard budget.take(bytes) else { return false }
        taken.withLock { $0 += bytes }
        return true
    }

    deinit { budget.give(taken.withLock { $0 }) }
}
