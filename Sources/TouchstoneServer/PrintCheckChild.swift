internal import CSeccomp
import Touchstone
import TouchstoneFingerprint
import TouchstonePOSIX
#if canImport(Glibc)
import Glibc
#endif

/// `touchstoned --check-prints`: the print checker, a fresh process the
/// daemon spawns for each import of prints (`ChildPrintChecker`). It holds
/// no gate, no database and no other user's data: it reads one request on
/// stdin, bounds itself (no core dump, address space and CPU time
/// limited), registers the GLib types it needs, enters its seccomp filter
/// (`PrintCheckConfinement`), then has libfprint read and re-serialize
/// each print, and writes the reply on stdout.
///
/// Exit status: 0 with a reply written; 2 a request that does not read;
/// 3 the confinement could not be entered (nothing was checked).
package enum PrintCheckChild {
    /// The address space it may use: the runtime and libraries mapped at
    /// start (about 140 MiB, measured on a debug build) and ample room for
    /// ten prints, well short of what a runaway deserializer would take.
    static let addressSpace: rlim_t = 1 << 30
    /// CPU seconds: SIGXCPU at the first bound, SIGKILL at the second.
    static let cpuSeconds: (soft: rlim_t, hard: rlim_t) = (4, 5)

    package static func run() -> Never {
        bound()
        let prints: [[UInt8]]
        do {
            prints = try PrintCheckWire.prints(inRequest: readInput())
        } catch {
            report("the request does not read: \(error)")
            _exit(2)
        }
        #if TOUCHSTONE_TEST_SUPPORT
        let hooks = TestHooks(prints)
        hooks.beforeConfinement()
        #endif
        PrintCodec.prepare()
        do {
            try PrintCheckConfinement.enter()
        } catch {
            report("cannot confine the print checker: \(error)")
            _exit(3)
        }
        #if TOUCHSTONE_TEST_SUPPORT
        hooks.afterConfinement()
        #endif
        let readings = prints.map { bytes -> PrintReading in
            do throws(FingerprintError) {
                let print = try PrintCodec.inspect(bytes)
                return .read(driver: print.reader.driver, deviceID: print.reader.deviceID, finger: print.finger, data: print.data)
            } catch {
                if case .invalidPrint(_, let reason) = error { return .refused(reason) }
                return .refused(error.description)
            }
        }
        writeAll(PrintCheckWire.reply(readings), to: 1)
        _exit(0)
    }

    /// No core dump (a print is personal data), and bounded address space
    /// and CPU time.
    private static func bound() {
        var none = rlimit(rlim_cur: 0, rlim_max: 0)
        var space = rlimit(rlim_cur: addressSpace, rlim_max: addressSpace)
        var cpu = rlimit(rlim_cur: cpuSeconds.soft, rlim_max: cpuSeconds.hard)
        guard setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none) == 0, setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &space) == 0,
              setrlimit(__rlimit_resource_t(RLIMIT_CPU.rawValue), &cpu) == 0 else {
            report("setrlimit: \(Errno.current.description)")
            _exit(3)
        }
    }

    /// Stdin to its end, at most a request's largest size.
    private static func readInput() throws(PrintCheckWire.Malformed) -> [UInt8] {
        var input: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let outcome = chunk.withUnsafeMutableBytes { buffer in
                Result { () throws(Errno) in try valueOrErrno(retryOnInterrupt: true) { read(0, buffer.baseAddress, buffer.count) } }
            }
            let count: Int
            switch outcome {
            case .success(let read): count = read
            case .failure(let error): throw PrintCheckWire.Malformed("stdin: \(error.description)")
            }
            if count == 0 { return input }
            input += chunk[0..<count]
            guard input.count <= PrintCheckWire.maximumBytes else { throw PrintCheckWire.Malformed("more than \(PrintCheckWire.maximumBytes) bytes") }
        }
    }

    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var at = 0
        while at < bytes.count {
            // Best effort: a report the daemon does not read is no failure.
            let outcome = bytes[at...].withUnsafeBytes { buffer in
                Result { () throws(Errno) in
                    try valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true) { write(descriptor, buffer.baseAddress, buffer.count) }
                }
            }
            guard case .success(let written) = outcome, written > 0 else { return }
            at += written
        }
    }

    /// One line on stderr (/dev/null when the daemon runs it).
    static func report(_ line: String) {
        writeAll(Array("touchstoned --check-prints: \(line)\n".utf8), to: 2)
    }
}

#if TOUCHSTONE_TEST_SUPPORT
extension PrintCheckChild {
    /// Debug builds only, with TOUCHSTONE_TEST_PRINT_CHECK=1 in the
    /// environment (the daemon passes it on to the checker): a print whose
    /// bytes are one of these markers makes the checker misbehave, so that
    /// the tests see what the daemon makes of it, or probe the confinement.
    /// Release builds, or no variable: markers are print bytes like any.
    struct TestHooks {
        let markers: Set<String>

        init(_ prints: [[UInt8]]) {
            guard let value = getenv("TOUCHSTONE_TEST_PRINT_CHECK"), strcmp(value, "1") == 0 else {
                markers = []
                return
            }
            markers = Set(prints.compactMap { String(validating: $0, as: UTF8.self) }.filter { $0.hasPrefix("test:") })
        }

        func beforeConfinement() {
            // Blocks for good without using CPU: the daemon's deadline ends it.
            if markers.contains("test:hang") { while true { pause() } }
            if markers.contains("test:garbage") {
                PrintCheckChild.writeAll(Array("TSPA\u{1}\u{1}\u{9}not a reading".utf8), to: 1)
                _exit(0)
            }
            if markers.contains("test:open-before") { probeOpen("before") }
        }

        func afterConfinement() {
            if markers.contains("test:open-after") { probeOpen("after") }
            if markers.contains("test:socket-after") {
                let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
                PrintCheckChild.report("test: socket after confinement: \(descriptor >= 0 ? "opened" : Errno.current.description)")
            }
            if markers.contains("test:abort") { abort() }
            if markers.contains("test:pause-after") {
                // Waits on a futex for good, so that a test reads this
                // process's /proc status and limits, then kills it.
                PrintCheckChild.report("test: paused after confinement")
                var mutex = pthread_mutex_t()
                var condition = pthread_cond_t()
                pthread_mutex_init(&mutex, nil)
                pthread_cond_init(&condition, nil)
                pthread_mutex_lock(&mutex)
                while true { pthread_cond_wait(&condition, &mutex) }
            }
        }

        /// Opens /etc/passwd (any user may read it) and says what happened.
        private func probeOpen(_ when: String) {
            let outcome: String
            do throws(Errno) {
                try OwnedDescriptor.open("/etc/passwd", O_RDONLY | O_CLOEXEC).close()
                outcome = "opened"
            } catch {
                outcome = error.description
            }
            PrintCheckChild.report("test: open /etc/passwd \(when) confinement: \(outcome)")
        }
    }
}
#endif
