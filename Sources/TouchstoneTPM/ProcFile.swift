import Glibc

/// The whole of a /proc file, or nil when it cannot be read. (Its size
/// reads as 0, and Foundation's file readers trust that size: they return
/// nothing, or one read's worth; a long /proc/PID/maps came back cut
/// short.) Package-wide: the simulator's process checks and the test rigs
/// use it.
package func readProcFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 { if errno == EINTR { continue }; return nil }
        if n == 0 { break }
        bytes += chunk[..<n]
    }
    return String(decoding: bytes, as: UTF8.self)
}
