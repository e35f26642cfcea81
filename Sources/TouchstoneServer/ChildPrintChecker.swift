internal import CSeccomp
import Foundation
import Touchstone
import TouchstonePOSIX
#if canImport(Glibc)
import Glibc
#endif

/// The daemon's print checker: each check is a fresh `touchstoned
/// --check-prints` (`PrintCheckChild`), spawned with an environment of its
/// own, no descriptor but a pipe for its stdin and one for its stdout
/// (stderr is /dev/null), and a deadline. Whatever it does (crash, hang,
/// answer garbage) ends in a `PrintCheckFailure` for this import only.
///
/// The prints are read twice, by two fresh processes: the client's bytes,
/// then libfprint's serialization the first made of them, which must read
/// back as the same print and serialize to the same bytes. What the daemon
/// stores has then been read by libfprint without harm, and is libfprint's
/// own writing of it.
package struct ChildPrintChecker: PrintChecking {
    /// The program to run: this process's own executable by default.
    package var executable = "/proc/self/exe"
    /// How long one checker may take, from its start to its exit.
    package var deadline: Duration = .seconds(10)

    package init() {}

    package func check(_ prints: [[UInt8]]) throws(PrintCheckFailure) -> [PrintReading] {
        guard !prints.isEmpty else { return [] }
        guard prints.count <= PrintCheckWire.maximumPrints, prints.allSatisfy({ $0.count <= PrintCheckWire.maximumPrintBytes }) else {
            throw PrintCheckFailure("at most \(PrintCheckWire.maximumPrints) prints of at most \(PrintCheckWire.maximumPrintBytes) bytes each")
        }
        let first = try run(prints)
        let read = first.compactMap { reading -> [UInt8]? in
            if case .read(_, _, _, let data) = reading { data } else { nil }
        }
        // A print refused already refuses the import: no second pass.
        guard read.count == first.count else { return first }
        guard try run(read) == first else {
            throw PrintCheckFailure("libfprint's serialization of a print does not read back as the same print")
        }
        return first
    }

    /// One checker run: the request written, the reply read, the exit
    /// waited for, all within `deadline`.
    func run(_ prints: [[UInt8]]) throws(PrintCheckFailure) -> [PrintReading] {
        let (status, reply) = try exchange(PrintCheckWire.request(prints))
        switch status {
        case .exited(0): break
        case .exited(2): throw PrintCheckFailure("the print checker could not read its request")
        case .exited(3): throw PrintCheckFailure("the print checker could not confine itself (rlimits, seccomp), so it checked nothing")
        case .exited(let code): throw PrintCheckFailure("the print checker failed (exit status \(code))")
        case .signalled(let signal):
            throw PrintCheckFailure("the print checker crashed (signal \(signal), \(String(cString: strsignal(signal))))")
        case .timedOut: throw PrintCheckFailure("the print checker did not finish within \(deadline.components.seconds) s and was killed")
        }
        do {
            return try PrintCheckWire.readings(inReply: reply, expected: prints.count)
        } catch {
            throw PrintCheckFailure("the print checker's answer does not read (\(error))")
        }
    }

    enum Status {
        case exited(Int32)
        case signalled(Int32)
        case timedOut
    }

    /// Spawns the checker, feeds it `request`, collects its stdout.
    private func exchange(_ request: [UInt8]) throws(PrintCheckFailure) -> (Status, [UInt8]) {
        let child: PipedChild
        do {
            child = try ChildSpawn.startPiped(executable, ["--check-prints"], environment: Self.environment, newSession: true)
        } catch {
            throw PrintCheckFailure("cannot start the print checker: \(error)")
        }
        let pid = child.pid
        // The write end closes as soon as the request is in (the checker
        // then sees its end); the others with this function.
        let input = child.input
        _ = fcntl(input.rawValue, F_SETFL, O_NONBLOCK)
        var toChild: OwnedDescriptor? = input
        let fromChild = child.output
        let process: OwnedDescriptor
        do throws(Errno) {
            let raw = try valueOrErrno(retryOnInterrupt: false) { pidfd_open(pid, 0) }
            process = OwnedDescriptor(adopting: raw)
        } catch {
            kill(pid, SIGKILL)
            _ = ChildSpawn.waitForExit(pid)
            throw PrintCheckFailure("pidfd_open: \(error)")
        }
        _ = fcntl(fromChild.rawValue, F_SETFL, O_NONBLOCK)

        let end = ContinuousClock.now + deadline
        var written = 0
        var reply: [UInt8] = []
        var replyOpen = true
        var exited = false
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while replyOpen || !exited {
            let left = end - ContinuousClock.now
            guard left > .zero else {
                kill(pid, SIGKILL)
                _ = ChildSpawn.waitForExit(pid)
                return (.timedOut, [])
            }
            var watched = [pollfd(fd: exited ? -1 : process.rawValue, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: replyOpen ? fromChild.rawValue : -1, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: toChild?.rawValue ?? -1, events: Int16(POLLOUT), revents: 0)]
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1)
            // Interrupted: the deadline is checked again, then poll again.
            guard (try? valueOrErrno(retryOnInterrupt: false) { poll(&watched, 3, milliseconds) }) != nil else { continue }
            if watched[0].revents != 0 { exited = true }
            if watched[2].revents != 0 {
                let outcome = request[written...].withUnsafeBytes { bytes in
                    Result { () throws(Errno) in try toChild?.write(bytes) ?? 0 }
                }
                switch outcome {
                case .success(let count): written += count
                case .failure(let error) where error == .resourceTemporarilyUnavailable: break
                // The checker closed its stdin (it exits, and says why).
                case .failure: written = request.count
                }
                // All in: the checker sees the end of its input.
                if written == request.count { _ = toChild.take() }
            }
            if watched[1].revents != 0 {
                let outcome = chunk.withUnsafeMutableBytes { buffer in
                    Result { () throws(Errno) in try fromChild.read(into: buffer) }
                }
                switch outcome {
                case .success(let count) where count > 0:
                    reply += chunk[0..<count]
                    if reply.count > PrintCheckWire.maximumBytes {
                        kill(pid, SIGKILL)
                        _ = ChildSpawn.waitForExit(pid)
                        throw PrintCheckFailure("the print checker's answer is longer than \(PrintCheckWire.maximumBytes) bytes")
                    }
                case .failure(let error) where error == .resourceTemporarilyUnavailable: break
                case .success, .failure: replyOpen = false
                }
            }
        }
        var status: Int32 = 0
        _ = try? valueOrErrno(retryOnInterrupt: true) { waitpid(pid, &status, 0) }
        let signal = status & 0x7f
        return (signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal), reply)
    }

    /// The checker's whole environment: no backtracer (it would start
    /// another program); in debug builds the tests' hook, passed on.
    private static var environment: [String: String] {
        var environment = ["SWIFT_BACKTRACE": "enable=no"]
        #if TOUCHSTONE_TEST_SUPPORT
        if let hook = ProcessInfo.processInfo.environment["TOUCHSTONE_TEST_PRINT_CHECK"] {
            environment["TOUCHSTONE_TEST_PRINT_CHECK"] = hook
        }
        #endif
        return environment
    }
}
