import Glibc
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
    package func sendImage(_ image: GreyImage, wait: Duration = .seconds(10)) async throws {
        let frame = image.virtualImageFrame
        let failure: String? = await withCheckedContinuation { continuation in
            startDetachedThread(name: "ts-image-send") {
                continuation.resume(returning: send(frame: frame, wait: wait))
            }
        }
        if let failure { throw VirtualReaderSocketError(failure) }
    }

    /// Connects (polling every 10 ms until `wait` is over) and writes
    /// `frame`, blocking: nil, or what failed.
    private func send(frame: [UInt8], wait: Duration) -> String? {
        let deadline = ContinuousClock.now + wait
        while true {
            let connection: OwnedDescriptor?
            do { connection = try connectOnce() } catch { return "\(error)" }
            if let connection {
                do {
                    try frame.withUnsafeBytes { bytes in try connection.writeAll(bytes) }
                    return nil
                } catch {
                    return "write to \(path): \(error)"
                }
            }
            guard ContinuousClock.now < deadline else {
                return "virtual image socket \(path) did not accept within \(wait)"
            }
            usleep(10_000)
        }
    }
}
