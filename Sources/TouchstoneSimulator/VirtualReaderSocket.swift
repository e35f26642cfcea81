import Foundation
import Glibc
import TouchstoneModel
import TouchstonePOSIX

/// The control socket of one libfprint virtual reader: how tests and the
/// simulator "touch" it. libfprint is the server and listens only while
/// the reader is open. virtual_device and virtual_device_storage take one
/// text command per connection, without a newline, and close the
/// connection when done; virtual_image reads images (`sendImage`) and
/// commands given as a negative width (`sendImageCommand`), and closes the
/// connection when it finds the end of what was sent.
package struct VirtualReaderSocket: Sendable {
    package let path: String

    package init(path: String) { self.path = path }

    /// Sends `command` once the socket accepts connections (waiting up to
    /// `wait`), then reads the reply to EOF and returns it.
    @discardableResult
    package func send(_ command: String, wait: Duration = .seconds(10)) async throws -> String {
        let deadline = ContinuousClock.now + wait
        while true {
            if let connection = try connectOnce() {
                return try exchange(connection, command)
            }
            guard ContinuousClock.now < deadline else {
                throw VirtualReaderSocketError("virtual reader socket \(path) did not accept within \(wait)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// One connection attempt: the socket, or nil when nobody listens yet.
    func connectOnce() throws -> OwnedDescriptor? {
        let connection: OwnedDescriptor
        do { connection = try .unixStreamSocket() } catch { throw VirtualReaderSocketError("socket(): \(error)") }
        do {
            try connection.connect(unixSocket: path)
        } catch .fileNameTooLong {
            throw VirtualReaderSocketError("socket path too long: \(path)")
        } catch .noSuchFileOrDirectory, .connectionRefused {
            return nil
        } catch {
            throw VirtualReaderSocketError("connect(\(path)): \(error) (errno \(error.rawValue))")
        }
        return connection
    }

    /// Writes the command, half-closes, reads to EOF (30 s receive timeout:
    /// the reader's process answers from its main loop, which a loaded
    /// machine may hold up; the bound is for a process that hangs).
    private func exchange(_ connection: borrowing OwnedDescriptor, _ command: String) throws -> String {
        try? connection.setOption(SOL_SOCKET, SO_RCVTIMEO, timeval(tv_sec: 30, tv_usec: 0))
        do {
            try Array(command.utf8).withUnsafeBytes { bytes in try connection.writeAll(bytes) }
        } catch {
            throw VirtualReaderSocketError("write to \(path): \(error)")
        }
        try? connection.shutdown(SHUT_WR)
        var reply: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        while true {
            let n: Int
            do {
                n = try buffer.withUnsafeMutableBytes { bytes in try connection.read(into: bytes) }
            } catch {
                throw VirtualReaderSocketError("read from \(path): \(error)")
            }
            if n == 0 { break }
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
