import FoundationEssentials
import Glibc
import TouchstonePOSIX
import TouchstoneSecure

/// Reads one line from a descriptor on a dedicated thread, so that the
/// async caller can be cancelled (Ctrl-C) while it waits: the thread polls
/// the descriptor and a private pipe that cancellation writes to. Never
/// blocks a Swift concurrency thread.
///
/// Reads one byte at a time, so nothing after the newline is consumed: the
/// next line stays for the next passcode asked on the same descriptor.
enum LineReader {
    /// How a read ended.
    enum Outcome: Sendable {
        case line(SecureBytes)
        case endOfInput
        case cancelled
        case failed(String)
    }

    /// The next line from `fd` (without its `\n` or `\r\n`), at most
    /// `limit` bytes.
    static func readLine(from fd: Int32, limit: Int = 4096) async -> Outcome {
        let cancel: CancelPipe
        do {
            cancel = try CancelPipe()
        } catch {
            return .failed("pipe: \(error)")
        }
        let result = Handover()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                startDetachedThread(name: "touchstone-line") {
                    result.put(blockingRead(fd, cancel: cancel.readEnd, limit: limit))
                    continuation.resume()
                }
            }
        } onCancel: {
            cancel.signal()
        }
        return result.take()
    }

    /// The outcome, handed from the reading thread to the caller under a
    /// lock: the lock orders the thread's writes (the line's bytes, its
    /// SecureBytes) before the caller's reads, visibly to ThreadSanitizer,
    /// which does not see the ordering that the continuation gives (hence
    /// `Locked`, a pthread mutex).
    private final class Handover: Sendable {
        private let outcome = Locked<Outcome?>(nil)

        func put(_ value: Outcome) { outcome.withLock { $0 = value } }

        func take() -> Outcome {
            outcome.withLock { outcome in
                defer { outcome = nil }
                return outcome ?? .failed("the reading thread ended without a result")
            }
        }
    }

    /// The pipe that cancellation writes to. Closed only when both the
    /// reading thread and the cancellation handler are done with it, so a
    /// late cancel never writes to a descriptor number reused since.
    private final class CancelPipe: Sendable {
        // write(2) is safe from any thread; the ends close with this.
        private let ends: DescriptorPair
        var readEnd: Int32 { ends.read.rawValue }

        init() throws(Errno) { ends = try OwnedDescriptor.pipe() }

        func signal() {
            var byte: UInt8 = 1
            _ = try? withUnsafeBytes(of: &byte) { bytes in try ends.write.write(bytes) }
        }
    }

    /// Reads the line on the caller's thread: `cancel` (or `alsoCancel`,
    /// when not -1) readable ends it (`.cancelled`). The loop the reading
    /// thread runs.
    static func blockingRead(_ fd: Int32, cancel: Int32, alsoCancel: Int32 = -1, limit: Int) -> Outcome {
        let buffer = SecureBytes(count: limit)
        var count = 0
        while true {
            var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: cancel, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: alsoCancel, events: Int16(POLLIN), revents: 0)]
            do {
                _ = try valueOrErrno(retryOnInterrupt: true) { poll(&fds, 3, -1) }
            } catch {
                return .failed("poll: \(error)")
            }
            if fds[1].revents != 0 || fds[2].revents != 0 { return .cancelled }
            guard fds[0].revents != 0 else { continue }
            var byte: UInt8 = 0
            let n: Int
            do {
                // The descriptor may be one the caller was handed and closed (--passcode-fd).
                n = try valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true) { read(fd, &byte, 1) }
            } catch .resourceTemporarilyUnavailable {
                continue
            } catch {
                return .failed(error.description)
            }
            if n == 0 {
                return count == 0 ? .endOfInput : .line(prefix(buffer, count))
            }
            if byte == 0x0a {
                if count > 0, buffer.withUnsafeBytes({ $0[count - 1] }) == 0x0d { count -= 1 }
                return .line(prefix(buffer, count))
            }
            guard count < limit else { return .failed("the line is longer than \(limit) bytes") }
            buffer.withUnsafeMutableBytes { $0[count] = byte }
            byte = 0
            count += 1
        }
    }

    /// The first `count` bytes of `buffer`, copied one byte at a time.
    ///
    /// Not with memcpy: it moves the bytes through vector registers, and
    /// this thread then calls Swift runtime functions for the first time
    /// (resuming the task, releasing the closure), which the dynamic linker
    /// binds on the spot, saving every vector register on the stack; glibc
    /// keeps an ended thread's stack for the next thread. The memory scan
    /// found the passcode there (docs/reliability.md, "Secrets in memory").
    private static func prefix(_ buffer: SecureBytes, _ count: Int) -> SecureBytes {
        let line = SecureBytes(count: count)
        buffer.withUnsafeBytes { source in
            line.withUnsafeMutableBytes { target in
                if count > 0 { copyBytewise(from: source.baseAddress!, to: target.baseAddress!, count: count) }
            }
        }
        return line
    }

    /// A byte loop kept as one (no optimization: the optimizer would make
    /// it a memcpy or vectorize it), through general-purpose registers.
    @_optimize(none)
    private static func copyBytewise(from source: UnsafeRawPointer, to target: UnsafeMutableRawPointer, count: Int) {
        var i = 0
        while i < count {
            target.storeBytes(of: source.load(fromByteOffset: i, as: UInt8.self), toByteOffset: i, as: UInt8.self)
            i += 1
        }
    }
}
