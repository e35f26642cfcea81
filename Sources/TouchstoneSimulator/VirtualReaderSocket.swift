import Foundation
import Glibc
import TouchstoneModel

/// The control socket of one libfprint virtual reader (virtual_device or
/// virtual_device_storage): how tests and the simulator "touch" it. libfprint is the
/// server and listens only while the reader is open; it takes one command
/// per connection, without a newline, and closes the connection when done.
package struct VirtualReaderSocket: Sendable {
    package let path: String

    package init(path: String) { self.path = path }

    /// Sends `command` once the socket accepts connections (waiting up to
    /// `wait`), then reads the reply to EOF and returns it.
    @discardableResult
    package func send(_ command: String, wait: Duration = .seconds(10)) async throws -> String {
        let deadline = ContinuousClock.now + wait
        while true {
            if let fd = try connectOnce() {
                defer { close(fd) }
                return try exchange(fd, command)
            }
            guard ContinuousClock.now < deadline else {
                throw VirtualReaderSocketError("virtual reader socket \(path) did not accept within \(wait)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// One connection attempt: the descriptor, or nil when nobody listens yet.
    private func connectOnce() throws -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw VirtualReaderSocketError("socket(): errno \(errno)") }
        guard let result = withUnixSocketAddress(path, { connect(fd, $0, $1) }) else {
            close(fd)
            throw VirtualReaderSocketError("socket path too long: \(path)")
        }
        if result == 0 { return fd }
        let code = errno
        close(fd)
        if code == ENOENT || code == ECONNREFUSED { return nil }
        throw VirtualReaderSocketError("connect(\(path)): errno \(code)")
    }

    /// Writes the command, half-closes, reads to EOF (5 s receive timeout).
    private func exchange(_ fd: Int32, _ command: String) throws -> String {
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(command.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw VirtualReaderSocketError("write to \(path): errno \(errno)") }
            sent += n
        }
        shutdown(fd, Int32(SHUT_WR))
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            guard n > 0 else { throw VirtualReaderSocketError("read from \(path): errno \(errno)") }
            reply.append(contentsOf: buffer[0..<n])
        }
        return String(decoding: reply, as: UTF8.self)
    }
}

/// The virtual reader could not be reached or answered badly.
package struct VirtualReaderSocketError: Error, CustomStringConvertible {
    package let description: String
    init(_ description: String) { self.description = description }
}
