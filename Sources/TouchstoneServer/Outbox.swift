import Dispatch
import TouchstoneClient

/// A connection's frames out, written in order on a queue of the
/// connection's own (not the cooperative pool: a client that does not read
/// holds none of its threads), each send bounded by the socket's send
/// deadline (`FrameSocket.setSendDeadline`). A send that fails ends the
/// connection.
final class Outbox: Sendable {
    private let socket: FrameSocket
    private let queue: DispatchQueue

    init(socket: FrameSocket) {
        self.socket = socket
        queue = DispatchQueue(label: "touchstoned-outbox")
    }

    /// Queues `frame` after those queued before it; `done` gets its
    /// failure, if any, once it was written or could not be.
    func post(_ frame: DaemonWire.Frame, done: @escaping @Sendable (DaemonWireError?) -> Void = { _ in }) {
        queue.async { [socket] in
            do throws(DaemonWireError) {
                try socket.send(frame)
                done(nil)
            } catch {
                socket.shut()
                done(error)
            }
        }
    }

    /// Sends `frame` after those queued before it.
    func send(_ frame: DaemonWire.Frame) async throws(DaemonWireError) {
        let failure: DaemonWireError? = await withCheckedContinuation { continuation in
            post(frame) { continuation.resume(returning: $0) }
        }
        if let failure { throw failure }
    }

    /// Queues `frame`, then ends the connection (a refusal's way out).
    func postLast(_ frame: DaemonWire.Frame) {
        post(frame) { [socket] _ in socket.shut() }
    }
}
