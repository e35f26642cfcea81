import FoundationEssentials
import Glibc
import TouchstoneSecure

/// The frames a socket receives, read on a thread of their own (blocking
/// reads never hold a task's thread) and awaited one at a time.
package final class FrameInbox: Sendable {
    private struct State {
        var frames: [DaemonWire.Frame] = []
        var end: DaemonWireError?
        var waiter: CheckedContinuation<DaemonWire.Frame, any Error>?
    }
    private let state = Locked(State())

    /// Starts reading `socket` on a new thread until it closes or fails.
    /// `idle`: how long the peer may stay silent between frames while
    /// `mayIdle` is false (nil: forever); `stall`: how long a frame may take
    /// once begun.
    /// `budget`: the locked memory the peer's frames may hold.
    package init(reading socket: FrameSocket, idle: Duration?, stall: Duration, budget: (any FrameBudget)? = nil,
                 mayIdle: @escaping @Sendable () -> Bool = { false }) {
        startDetachedThread(name: "touchstone-socket") { [self] in
            while true {
                do {
                    deliver(try socket.receive(idle: idle, stall: stall, budget: budget, keepWaiting: mayIdle))
                } catch {
                    finish(error as? DaemonWireError ?? .closed)
                    return
                }
            }
        }
    }

    private func deliver(_ frame: DaemonWire.Frame) {
        let waiter = state.withLock { state -> CheckedContinuation<DaemonWire.Frame, any Error>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.frames.append(frame)
            return nil
        }
        waiter?.resume(returning: frame)
    }

    private func finish(_ error: DaemonWireError) {
        let waiter = state.withLock { state -> CheckedContinuation<DaemonWire.Frame, any Error>? in
            state.end = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: error)
    }

    /// Whether the connection has ended (the peer closed it, or it failed)
    /// with no frame left to read.
    package var hasEnded: Bool { state.withLock { $0.end != nil && $0.frames.isEmpty } }

    /// The next frame; throws the error that ended the connection.
    package func next() async throws(DaemonWireError) -> DaemonWire.Frame {
        do {
            return try await withCheckedThrowingContinuation { continuation in
                let ready: Result<DaemonWire.Frame, DaemonWireError>? = state.withLock { state in
                    if !state.frames.isEmpty { return .success(state.frames.removeFirst()) }
                    if let end = state.end { return .failure(end) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } catch let error as DaemonWireError {
            throw error
        } catch {
            throw .closed
        }
    }
}

/// The client's side of a connection: the socket, its inbox, and the
/// handling of the daemon's prompts while a call is in flight.
package final class DaemonConnection: Sendable {
    package let socket: FrameSocket
    let inbox: FrameInbox

    package init(socket: FrameSocket) {
        self.socket = socket
        // The daemon may think as long as it needs (a touch, a passcode);
        // a frame once begun must arrive whole.
        inbox = FrameInbox(reading: socket, idle: nil, stall: .seconds(30))
    }

    package func close() { socket.shut() }

    /// Whether the daemon has closed this connection (an idle one, after
    /// its timeout) or it failed: a new one is needed for the next call.
    package var hasEnded: Bool { inbox.hasEnded }

    /// One call: the request, then its response, the daemon's prompts
    /// answered by `interaction` meanwhile. Any failure of the connection
    /// is a `DaemonFailure` naming `socketPath` (lost when it closed).
    package func call<R: EngineRequest>(_ request: R, interaction: (any AuthenticationInteraction)? = nil,
                                         socketPath: String) async throws(DaemonFailure) -> Outcome<R> {
        do {
            let frame = try DaemonWire.Frame(request: request, program: ProcessInfo.processInfo.processName,
                                             interactive: interaction != nil)
            do {
                try socket.send(frame)
            } catch {
                // The daemon may have closed an idle connection as the
                // request went: its word on that (DaemonWire.idleClosing) is
                // read first, if it wrote one; else the send's failure stands.
                guard let said = try? await self.await(interaction: nil), let outcome = try? said.decodeCarrying(Outcome<R>.self),
                      case .refused(DaemonWire.idleClosing) = outcome else { throw error }
                return outcome
            }
            return try await self.await(interaction: interaction).decodeCarrying(Outcome<R>.self)
        } catch let error as DaemonWireError {
            throw DaemonFailure(error, socket: socketPath)
        } catch {
            throw DaemonFailure(.lost, socket: socketPath, reason: "\(error)")
        }
    }

    /// Handles frames until the call's response: scan events go to
    /// `interaction` in order, prompts are answered by it (each in a task of
    /// its own, cancelled when the daemon no longer needs it).
    package func await(interaction: (any AuthenticationInteraction)?) async throws -> DaemonWire.Frame {
        var prompts: [UInt32: Task<Void, Never>] = [:]
        defer { prompts.values.forEach { $0.cancel() } }
        while true {
            let frame = try await inbox.next()
            switch frame.kind {
            case .response:
                return frame
            case .event:
                await interaction?.scanEvent(try frame.decode(ScanEvent.self))
            case .prompt:
                let prompt = try frame.decode(DaemonPrompt.self)
                prompts[prompt.id] = Task { [socket] in
                    let (reply, secrets) = await Self.answer(prompt, interaction)
                    guard !Task.isCancelled else { return }
                    try? socket.send(try DaemonWire.Frame(.reply, reply, secrets: secrets))
                }
            case .cancel:
                prompts.removeValue(forKey: try frame.decode(DaemonCancel.self).id)?.cancel()
            case .request, .reply:
                throw DaemonWireError.malformed("a \(frame.kind) frame from the daemon")
            }
        }
    }

    private static func answer(_ prompt: DaemonPrompt,
                               _ interaction: (any AuthenticationInteraction)?) async -> (DaemonReply, [SecureBytes]) {
        guard let interaction else { return (DaemonReply(id: prompt.id, answer: .failed(.notInteractive)), []) }
        switch prompt.need {
        case .touch(let reason, let passcodeAllowed):
            await interaction.waitForPasscodeRequest(reason: reason, passcodeAllowed: passcodeAllowed)
            return (DaemonReply(id: prompt.id, answer: .fallback), [])
        case .passcode(let reason):
            do {
                let passcode = try await interaction.passcode(reason: reason)
                return (DaemonReply(id: prompt.id, answer: .passcode), [passcode])
            } catch {
                return (DaemonReply(id: prompt.id, answer: .failed(error)), [])
            }
        }
    }
}
