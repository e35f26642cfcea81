import Glibc
import TouchstoneModel
import TouchstonePOSIX
import TouchstoneSecure

/// Sending images to libfprint's `virtual_image` reader, whose socket
/// takes frames rather than text commands: two native-endian int32 (width,
/// height), then the greyscale pixels; a negative width is a command
/// instead (-1 retry, -2 error, with the code as the height; -4 the
/// finger on or off, as the height is 1 or 0; -5 the reader removed). The
/// reader reads a frame only while an operation runs (or from then on); a
/// frame sent early waits in the socket. It closes a connection when it
/// next reads and finds the end of what was sent: `untilTaken` waits for
/// that, so a touch returns once the reader took it in.
extension VirtualReaderSocket {
    /// Makes the image reader report `retry` for the touch it waits for, as
    /// an image sensor does: the finger lands (-4, 1), the capture is poor
    /// (-1, the retry's code), the finger lifts (-4, 0). libfprint 1.94's
    /// image device takes a retry as coming after a capture and then waits
    /// for the finger to go: a bare retry makes it warn of an impossible
    /// state change and drop the next image (measured:
    /// "fpi_image_device_image_captured: assertion ... failed").
    package func sendImageRetry(_ retry: SimulatedRetry, wait: Duration = .seconds(10), untilTaken: Bool = false) async throws {
        try await sendFrame(Self.command(-4, 1) + Self.command(-1, Int32(retry.libfprintCode)) + Self.command(-4, 0),
                            wait: wait, untilTaken: untilTaken)
    }

    /// Makes the image reader fail its operation with `error`.
    package func sendImageError(_ error: SimulatedReaderError, wait: Duration = .seconds(10), untilTaken: Bool = false) async throws {
        try await sendFrame(Self.command(-2, Int32(error.libfprintCode)), wait: wait, untilTaken: untilTaken)
    }

    /// Removes the image reader from the process that has it open.
    package func sendImageRemoval(wait: Duration = .seconds(10)) async throws {
        try await sendFrame(Self.command(-5, 0), wait: wait, untilTaken: false)
    }

    /// A command frame: two native-endian int32.
    private static func command(_ kind: Int32, _ value: Int32) -> [UInt8] {
        withUnsafeBytes(of: kind) { Array($0) } + withUnsafeBytes(of: value) { Array($0) }
    }

    /// Sends `image` on a connection of its own (waiting up to `wait` for
    /// the socket to accept), connected and written from a thread of its
    /// own: a blocking write larger than the socket's buffer must not hold
    /// a thread that libfprint's main loop may need. Returns once the frame
    /// is written (libfprint reads it when its operation wants a touch), or
    /// with `untilTaken` once the reader took it in (within `wait`).
    package func sendImage(_ image: GreyImage, wait: Duration = .seconds(10), untilTaken: Bool = false) async throws {
        try await sendFrame(image.virtualImageFrame, wait: wait, untilTaken: untilTaken)
    }

    /// Sends `frame` on a connection of its own, from a thread of its own.
    private func sendFrame(_ frame: [UInt8], wait: Duration, untilTaken: Bool) async throws {
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
