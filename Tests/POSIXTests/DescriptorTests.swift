import Foundation
import Glibc
import Synchronization
import Testing
import TouchstonePOSIX

/// OwnedDescriptor closes exactly once; valueOrErrno retries what a signal
/// interrupted.
@Suite("OwnedDescriptor and valueOrErrno")
struct DescriptorTests {
    /// Everything up to the end of `pipe` (EOF: every write end closed).
    static func readToEnd(_ pipe: borrowing OwnedDescriptor) throws -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 256)
        while true {
            let n = try chunk.withUnsafeMutableBytes { bytes in try pipe.read(into: bytes) }
            if n == 0 { return out }
            out += chunk[..<n]
        }
    }

    static func send(_ text: String, _ pipe: borrowing OwnedDescriptor) throws {
        try Array(text.utf8).withUnsafeBytes { bytes in try pipe.writeAll(bytes) }
    }

    @Test("an owner that goes away closes its descriptor: the reader sees the end")
    func deinitCloses() throws {
        let pair = try OwnedDescriptor.pipe()
        let reader = pair.keepingRead()  // the write end's owner is dropped
        #expect(try Self.readToEnd(reader) == [])
    }

    @Test("close() closes, once: the number it freed, reused at once, is not closed again")
    func closeOnce() throws {
        let next = try Self.closeThenOpenAnother()
        try Self.send("ok", next.write)
        var buffer = [UInt8](repeating: 0, count: 2)
        let n = try buffer.withUnsafeMutableBytes { bytes in try next.read.read(into: bytes) }
        #expect(n == 2 && buffer == Array("ok".utf8))
    }

    /// Closes a pipe's only write end with close() (the reader sees the
    /// end), then makes another pipe: the lowest free numbers go to it, the
    /// closed writer's among them. A second close of that number (a deinit
    /// after close()) would close one of its ends as this returns.
    static func closeThenOpenAnother() throws -> DescriptorPair {
        let pair = try OwnedDescriptor.pipe()
        let writer = OwnedDescriptor(adopting: try valueOrErrno(retryOnInterrupt: false) { dup(pair.write.rawValue) })
        let reader = pair.keepingRead()  // `writer` is the only write end now
        try send("hi", writer)
        try writer.close()
        #expect(try readToEnd(reader) == Array("hi".utf8))
        return try OwnedDescriptor.pipe()
    }

    @Test("release() hands the number over open (close-on-exec); the new owner closes it")
    func releaseKeepsOpen() throws {
        let raw = try OwnedDescriptor.pipe().keepingWrite().release()
        let flags = try valueOrErrno(retryOnInterrupt: true) { fcntl(raw, F_GETFD) }
        #expect(flags & FD_CLOEXEC != 0)
        try OwnedDescriptor(adopting: raw).close()
    }

    @Test("a read a signal interrupts: retried with retryOnInterrupt, thrown as .interrupted without",
          .serialized, arguments: [true, false])
    func interruptedRead(retry: Bool) throws {
        // SIGUSR2 with a handler and without SA_RESTART: a blocked read
        // returns EINTR. (Nothing else in the tests uses SIGUSR2.)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        sigaction(SIGUSR2, &action, &previous)
        defer { sigaction(SIGUSR2, &previous, nil) }

        let pair = try OwnedDescriptor.pipe()
        let readEnd = pair.read.rawValue
        let reader = Mutex<pthread_t?>(nil)
        let calls = Atomic<Int>(0)
        let outcome = Mutex<Result<Int, Errno>?>(nil)
        let finished = DispatchSemaphore(value: 0)
        let mayExit = DispatchSemaphore(value: 0)  // the thread lives while it may be signalled
        Thread {
            // Unblocked here: a thread inherits its creator's mask, and a
            // Dispatch worker blocks most signals.
            var usr2 = sigset_t()
            sigemptyset(&usr2)
            sigaddset(&usr2, SIGUSR2)
            pthread_sigmask(SIG_UNBLOCK, &usr2, nil)
            reader.withLock { $0 = pthread_self() }
            var byte: UInt8 = 0
            let result = Result { () throws(Errno) in
                try valueOrErrno(retryOnInterrupt: retry) {
                    calls.add(1, ordering: .relaxed)
                    return read(readEnd, &byte, 1)
                }
            }
            outcome.withLock { $0 = result }
            finished.signal()
            mayExit.wait()
        }.start()
        defer { mayExit.signal() }

        // Signal the reader until its read was interrupted: a second call
        // (retried) or an outcome (thrown).
        let deadline = ContinuousClock.now + .seconds(20)
        while calls.load(ordering: .relaxed) < 2, outcome.withLock({ $0 == nil }), ContinuousClock.now < deadline {
            if let thread = reader.withLock({ $0 }) { pthread_kill(thread, SIGUSR2) }
            usleep(5_000)
        }
        if retry {
            #expect(calls.load(ordering: .relaxed) >= 2)
            try Self.send("x", pair.write)  // the retried read gets it
        }
        #expect(finished.wait(timeout: .now() + 20) == .success)
        let result = outcome.withLock { $0 }
        #expect(result == (retry ? .success(1) : .failure(.interrupted)))
    }
}
