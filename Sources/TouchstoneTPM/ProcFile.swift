import Glibc
import TouchstonePOSIX

/// The whole of a /proc file, or nil when it cannot be read. (Its size
/// reads as 0, and Foundation's file readers trust that size: they return
/// nothing, or one read's worth; a long /proc/PID/maps came back cut
/// short.) Package-wide: the simulator's process checks and the test rigs
/// use it.
package func readProcFile(_ path: String) -> String? {
    guard let file = try? OwnedDescriptor.open(path, O_RDONLY) else { return nil }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        // EINTR retried; any other error: unreadable.
        guard let n = try? chunk.withUnsafeMutableBytes({ buffer in try file.read(into: buffer) }) else { return nil }
        if n == 0 { break }
        bytes += chunk[..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}
