import FoundationEssentials
import Glibc
import TouchstonePOSIX

/// Where the command writes: results on stdout, everything else (progress,
/// prompts, errors) on stderr. Writes go straight to the descriptors,
/// unbuffered, so that output is never lost at `exit`.
package enum Output {
    /// One line of progress or a prompt on stderr.
    package static func progress(_ line: String) {
        write(2, Array((line + "\n").utf8))
    }

    /// The error line, `touchstone: error: <message>`, and a `hint:` line
    /// when there is one.
    package static func error(_ message: String, hint: String? = nil) {
        progress("touchstone: error: \(message)")
        if let hint { progress("hint: \(hint)") }
    }

    /// One line of result on stdout.
    package static func result(_ line: String) {
        write(1, Array((line + "\n").utf8))
    }

    /// Writes every byte to `fd`, retrying short writes and EINTR; throws
    /// when the descriptor refuses (a closed pipe, a closed stdout). `fd` is
    /// one this process was handed, not one it owns: it may be closed.
    package static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws(Errno) {
        var offset = 0
        while offset < bytes.count {
            offset += try valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true) {
                Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            }
        }
    }

    /// The same, false when the descriptor refuses.
    @discardableResult
    package static func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        (try? writeAll(fd, bytes)) != nil
    }

    @discardableResult
    package static func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { write(fd, $0) }
    }

    /// A value as one line of JSON (keys sorted) on stdout.
    package static func json<T: Encodable>(_ value: T) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var data = try encoder.encode(value)
        data.append(0x0a)
        write(1, Array(data))
    }
}
