import Glibc
import TouchstoneModel
import TouchstonePOSIX
import TouchstoneSecure

/// Sending images to libfprint's `virtual_image` reader, whose socket
/// takes frames rather than text commands: two native-endian int32 (width,
/// height), then the greyscale pixels. The reader reads a frame only while
/// an operation runs (or from then on); a frame sent early waits in the
/// socket.
extension VirtualReaderSocket {
    /// Sends `image` on a connection of its own (waiting up to `wait` for
    /// the socket to accept), connected and written from a thread of its
    /// own: a blocking write larger than the socket's buffer must not hold
    /// a thread that libfprint's main loop may need. Returns once the frame
    /// is written; libfprint reads it when its operation wants a touch.
    /// `untilTaken`: returns only once the reader has taken the image in
    /// (within `wait`): it closes the connection when it next reads and
    /// finds the end of what was sent, after the image was captured.
    package func sendImage(_ image: GreyImage, wait: Duration = .seconds(10), untilTaken: Bool = false) async throws {
        try await send(frame: image.virtualImageFrame, wait: wait, untilTaken: untilTaken)
    }

    /// Sends a virtual_image command, a negative width: -1 retry (`value` a
    /// FpDeviceRetry code), -2 error (a FpDeviceError code), -3 automatic
    /// finger detection, -4 finger present, -5 unplug; returns once read.
    package func sendImageCommand(_ command: Int32, value: Int32, wait: Duration = .seconds(10)) async throws {
        try await send(frame: [command, value].withUnsafeBytes { Array($0) }, wait: wait, untilTaken: true)
    }

    private func send(frame: [UInt8], wait: Duration, untilTaken: Bool) async throws {
        let failure: String? = await withCheckedContinuation { continuation in
            startDetachedThread(name: "ts-image-send") {
                continuation.resume(returning: send(frame: frame, wait: wait, untilTaken: untilTaken))
            }
        }
        if let failure { throw VirtualReaderSocketError(failure) }
    }

    /// Connects (polling every 10 ms until `wait` is over) and writes
    /// `frame`, blocking (then, `untilTaken`, reads to the end): nil, or
    /// what failed.
    private func send(frame: [UInt8], wait: Duration, untilTaken: Bool) -> String? {
        let deadline = ContinuousClock.now + wait
        while true {
            let connection: OwnedDescriptor?
            do { connection = try connectOnce() } catch { return "\(error)" }
            if let connection {
                do {
                    try frame.withUnsafeBytes { bytes in try connection.writeAll(bytes) }
                } catch {
                    return "write to \(path): \(error)"
                }
                return untilTaken ? awaitEnd(of: connection, by: deadline, wait: wait) : nil
            }
            guard ContinuousClock.now < deadline else {
                return "virtual image socket \(path) did not accept within \(wait)"
            }
            usleep(10_000)
        }
    }

    /// Half-closes `connection` and reads until the reader closes it: nil,
    /// or what failed (nothing by `deadline`: no operation took the frame).
    private func awaitEnd(of connection: borrowing OwnedDescriptor, by deadline: ContinuousClock.Instant, wait: Duration) -> String? {
        try? connection.shutdown(SHUT_WR)
        let milliseconds = max((deadline - ContinuousClock.now).wholeMilliseconds, 1)
        try? connection.setOption(SOL_SOCKET, SO_RCVTIMEO,
                                  timeval(tv_sec: milliseconds / 1000, tv_usec: (milliseconds % 1000) * 1000))
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            do {
                if try buffer.withUnsafeMutableBytes({ raw in try connection.read(into: raw) }) == 0 { return nil }
            } catch .resourceTemporarilyUnavailable {
                return "the reader on \(path) did not take the image within \(wait) (no touch is awaited)"
            } catch {
                return "read from \(path): \(error)"
            }
        }
    }
}
