import Foundation
import Synchronization
import Touchstone
import TouchstonePOSIX
import TouchstoneSecure
#if canImport(Glibc)
import Glibc
#endif

/// One client connection: its uid and pid as the kernel gave them, one
/// call at a time, the prompts of that call, and the grants it holds
/// (they die with the connection).
package final class DaemonSession: Sendable {
    let server: DaemonServer
    let socket: FrameSocket
    /// Every frame to the client goes through it, in order.
    let outbox: Outbox
    let uid: uid_t
    let pid: pid_t
    /// The program, as the kernel names it (its executable where the
    /// daemon may read it, and its command name), for the log.
    let program: PeerProgram

    private struct State {
        var inFlight: Task<Void, Never>?
        var prompts: [UInt32: CheckedContinuation<(DaemonReply, [SecureBytes]), any Error>] = [:]
        var nextPrompt: UInt32 = 1
        var grants: [UInt64: HeldGrant] = [:]
        var grantsMade: UInt64 = 0
    }
    private let state = Locked(State())
    private let busy = Atomic<Bool>(false)

    init(server: DaemonServer, socket: FrameSocket, uid: uid_t, pid: pid_t) {
        self.server = server
        self.socket = socket
        outbox = Outbox(socket: socket)
        self.uid = uid
        self.pid = pid
        let namer = server.settings.programNamer.map { namer in { @Sendable (pidfd: Int32) in namer.executable(ofPIDFD: pidfd) } }
        program = socket.withPeerPIDFD { PeerProgram.named(pid: pid, pidfd: $0, namer: namer) }
    }

    func start() {
        // An idle timeout ends the connection only between calls.
        let inbox = FrameInbox(reading: socket, idle: server.settings.timeout, stall: server.settings.timeout,
                               budget: server.memory.of(uid),
                               mayIdle: { self.busy.load(ordering: .relaxed) })
        Task { await self.run(inbox) }
    }

    /// Ends the connection: the call in flight is cancelled, its prompts
    /// fail.
    func end() {
        socket.shut()
        let (task, prompts) = state.withLock { state in
            defer { state.prompts = [:]; state.grants = [:] }
            return (state.inFlight, Array(state.prompts.values))
        }
        task?.cancel()
        for prompt in prompts { prompt.resume(throwing: CancellationError()) }
    }

    private func run(_ inbox: FrameInbox) async {
        defer {
            end()
            server.ended(self)
        }
        /// The last request or answer to an open prompt: frames that are
        /// neither do not keep an idle connection open.
        var lastUseful = ContinuousClock.now
        while true {
            let frame: DaemonWire.Frame
            do {
                frame = try await inbox.next()
            } catch .closed {
                return
            } catch .timedOut {
                // Idle, or a frame that stalled: a client connects again when it has a call.
                log("silent for \(server.settings.timeout): connection closed")
                // Said first: a request that crosses the close is sent again (DaemonEngine).
                if let goodbye = try? DaemonWire.Frame(.response, Refusal(DaemonWire.idleClosing)) { try? await outbox.send(goodbye) }
                return
            } catch {
                log("protocol error: \(error); connection closed")
                // Written before the connection ends (on return).
                if let refusal = try? Self.refusal(of: error) { try? await outbox.send(refusal) }
                return
            }
            switch frame.kind {
            case .request:
                lastUseful = .now
                guard !busy.exchange(true, ordering: .relaxed) else {
                    log("a second request while one is in flight; connection closed")
                    return
                }
                let task = Task { await self.carryOut(frame) }
                state.withLock { $0.inFlight = task }
            case .reply:
                guard let reply = try? frame.decode(DaemonReply.self),
                      let waiter = state.withLock({ $0.prompts.removeValue(forKey: reply.id) }) else {
                    // A reply to a prompt already cancelled (or to none):
                    // ignored, and it does not count as activity.
                    if !busy.load(ordering: .relaxed), ContinuousClock.now - lastUseful > server.settings.timeout {
                        log("silent for \(server.settings.timeout) but for replies to no prompt: connection closed")
                        return
                    }
                    continue
                }
                lastUseful = .now
                waiter.resume(returning: (reply, frame.secrets))
            case .response, .prompt, .event, .cancel:
                log("a \(frame.kind) frame from a client; connection closed")
                return
            }
        }
    }

    private func carryOut(_ frame: DaemonWire.Frame) async {
        /// The call is over before its answer goes out: a client sends its
        /// next request as soon as it has the answer.
        func finished() {
            state.withLock { $0.inFlight = nil }
            busy.store(false, ordering: .relaxed)
        }
        let answer: DaemonWire.Frame
        do {
            let head = try frame.decode(RequestHeadOnly.self).head
            guard let operation = EngineOperations.byName[head.operation] else {
                throw DaemonWireError.malformed("no operation named '\(Self.clean(head.operation))'")
            }
            answer = try await serve(operation, frame, interactive: head.interactive)
        } catch {
            log("refused: \(error)")
            finished()
            if let refusal = try? DaemonWire.Frame(.response, Refusal("\(error)")) { outbox.postLast(refusal) }
            return
        }
        finished()
        do {
            try await outbox.send(answer)
        } catch {
            log("the answer could not be sent (\(error))")
        }
    }

    /// The answer to a frame that could not be read: a refusal that says
    /// why, in the client's own framing when it speaks an older version of
    /// the protocol (whose refusal has the same control part).
    package static func refusal(of error: DaemonWireError) throws(DaemonWireError) -> DaemonWire.Frame {
        guard case .version(let theirs) = error, theirs >= 1, theirs < DaemonWire.version else {
            return try DaemonWire.Frame(.response, Refusal(error.description))
        }
        var frame = try DaemonWire.Frame(.response, Refusal(
            "this client speaks protocol version \(theirs) and touchstoned \(DaemonWire.version): "
                + "install touchstone and touchstoned from the same release"))
        frame.version = theirs
        return frame
    }

    // MARK: - Operations

    /// Decodes the request of `operation` from `frame`, carries it out with
    /// the user's engine, and logs it; the response frame.
    private func serve<R: EngineOperation>(_ operation: R.Type, _ frame: DaemonWire.Frame,
                                           interactive: Bool) async throws(DaemonWireError) -> DaemonWire.Frame {
        let request = try frame.decodeCarrying(RequestEnvelope<R>.self).request
        let (outcome, opened) = await carryOut(request, interactive: interactive)
        log("\(R.logName): \(Self.summary(outcome))" + (request.reason.map { " (reason: \(Self.clean($0)))" } ?? "")
            + (opened.map { "; \(Self.clean($0))" } ?? ""))
        return try DaemonWire.Frame(response: outcome)
    }

    /// Carries out `request` for this connection's user; with the
    /// outcome, for the log, what it opened (its target) and through what.
    private func carryOut<R: EngineOperation>(_ request: R, interactive: Bool) async -> (Outcome<R>, String?) {
        var request = request
        // The reader is every user's: no request holds it waiting for a
        // touch longer than the daemon's cap, whatever it asked.
        request.capTouchTimeout(milliseconds: GrantPolicy.longestTouchMilliseconds)
        var through = ""
        if let presented = request.grant {
            switch take(presented.id) {
            case .success(let (held, age)):
                request.grant = held
                through = " through a grant made \(Int(age.rounded())) s before"
            case .failure(.notHeld):
                // Only a grant this connection holds proves anything.
                return (.failure(R.Failure(.invalidContext)), nil)
            case .failure(.expired):
                // Past its window: the next read needs a new authentication.
                return (.failure(R.Failure(.notInteractive)), request.target.map { "a grant past its window presented for \($0)" })
            }
        }
        let outcome = await perform(request, interactive: interactive)
        guard case .success(let response) = outcome else { return (outcome, nil) }
        return (outcome, (R.target(opened: response) ?? request.target).map { "opened \($0)" + through })
    }

    private func perform<R: EngineOperation>(_ request: R, interactive: Bool) async -> Outcome<R> {
        let engine: InProcessEngine
        do {
            engine = try await server.users.engine(for: uid, gates: server.gates, throttle: server.gate, accounts: server.accounts)
        } catch {
            let configuration = await server.users.configuration(for: uid)
            if let answer = await R.unopened(configuration, readerChoice: server.settings.readerChoice) { return .success(answer) }
            return .failure(R.Failure(error))
        }
        let interaction: (any AuthenticationInteraction)? = interactive ? SessionInteraction(session: self) : nil
        let result: Result<R.Response, R.Failure>
        do {
            result = .success(try await engine.call(request, interaction: interaction))
        } catch {
            result = .failure(error)
        }
        // The reader is every user's: released after an operation that may
        // have claimed it.
        if R.releasesReader { await engine.close() }
        switch result {
        case .success(var response):
            R.issue(&response) { keep(&$0, reuse: request.grantReuse ?? 0) }
            return .success(response)
        case .failure(let failure):
            return .failure(failure)
        }
    }

    /// Keeps a grant the engine issued for this connection, under a new
    /// random id that the client presents again, for the reuse window it
    /// asked (at most `GrantPolicy.longest`; 0: one use, within the
    /// daemon's timeout and never past `GrantPolicy.longest` either). A connection holds at most
    /// `GrantPolicy.perConnection`: beyond, the oldest goes.
    private func keep(_ grant: inout GrantReference, reuse: Double) {
        let now = PasscodeGate.clock()
        let window = min(max(reuse, 0), GrantPolicy.longest)
        let expires = now + min(window > 0 ? window : Double(server.settings.timeout.wholeMilliseconds) / 1000, GrantPolicy.longest)
        let (id, evicted) = state.withLock { state -> (UInt64, Int) in
            let before = state.grants.count
            state.grants = state.grants.filter { $0.value.expires >= now }
            var evicted = before - state.grants.count
            while state.grants.count >= GrantPolicy.perConnection,
                  let oldest = state.grants.min(by: { $0.value.order < $1.value.order })?.key {
                state.grants[oldest] = nil
                evicted += 1
            }
            var id = UInt64.random(in: 1...UInt64.max)
            while state.grants[id] != nil { id = UInt64.random(in: 1...UInt64.max) }
            state.grantsMade += 1
            state.grants[id] = HeldGrant(reference: grant, issued: now, order: state.grantsMade, expires: expires, singleUse: window == 0)
            return (id, evicted)
        }
        grant.id = id
        if evicted > 0 { log("\(evicted) grant(s) expired or over the \(GrantPolicy.perConnection) a connection holds: dropped") }
    }

    enum GrantRefusal: Error { case notHeld, expired }

    /// The grant `id` names on this connection, and how old it is; a
    /// one-use grant is spent once taken, an expired one is dropped.
    private func take(_ id: UInt64?) -> Result<(GrantReference, Double), GrantRefusal> {
        guard let id else { return .failure(.notHeld) }
        let now = PasscodeGate.clock()
        return state.withLock { state in
            guard let held = state.grants[id] else { return .failure(.notHeld) }
            guard now <= held.expires else {
                state.grants[id] = nil
                return .failure(.expired)
            }
            // A one-use grant is spent: presented again, it is past its
            // window (a new authentication is needed), then gone.
            if held.singleUse { state.grants[id]?.expires = -.infinity }
            return .success((held.reference, now - held.issued))
        }
    }

    private static func summary<R: EngineRequest>(_ outcome: Outcome<R>) -> String {
        switch outcome {
        case .success: "ok"
        case .failure(let error): "failed: \(error.message ?? "cancelled")"
        case .refused(let why): "refused: \(why)"
        }
    }

    /// Text a client gave, fit for one log line.
    static func clean(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) }.prefix(200))
    }

    func log(_ line: String) {
        server.log.write("uid \(uid), \(program): \(line)")
    }

    // MARK: - Prompts

    /// Sends a prompt and waits for its reply (at most the daemon's timeout
    /// for a passcode; a touch prompt waits until cancelled).
    func prompt(_ need: DaemonPrompt.Need) async throws -> (DaemonReply, [SecureBytes]) {
        let id = state.withLock { state -> UInt32 in
            defer { state.nextPrompt &+= 1 }
            return state.nextPrompt
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                state.withLock { $0.prompts[id] = continuation }
                do {
                    outbox.post(try DaemonWire.Frame(.prompt, DaemonPrompt(id: id, need: need))) { [state] failure in
                        guard let failure else { return }
                        if let waiter = state.withLock({ $0.prompts.removeValue(forKey: id) }) { waiter.resume(throwing: failure) }
                    }
                } catch {
                    if let waiter = state.withLock({ $0.prompts.removeValue(forKey: id) }) { waiter.resume(throwing: error) }
                }
            }
        } onCancel: {
            if let waiter = state.withLock({ $0.prompts.removeValue(forKey: id) }) {
                if let cancel = try? DaemonWire.Frame(.cancel, DaemonCancel(id: id)) { outbox.post(cancel) }
                waiter.resume(throwing: CancellationError())
            }
        }
    }
}

/// The client's interaction, as the daemon's engine sees it: every need
/// becomes a prompt on the connection.
private struct SessionInteraction: AuthenticationInteraction {
    let session: DaemonSession

    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        // Returns when the client answers (the person asked for the
        // passcode); cancelled when the touch ended first.
        guard let (reply, _) = try? await session.prompt(.touch(reason: reason, passcodeAllowed: passcodeAllowed)),
              case .fallback = reply.answer else {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            return
        }
    }

    func scanEvent(_ event: ScanEvent) async {
        if let frame = try? DaemonWire.Frame(.event, event) { session.outbox.post(frame) }
    }

    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes {
        let timeout = session.server.settings.timeout
        let reply: (DaemonReply, [SecureBytes])
        do {
            reply = try await withThrowingTaskGroup(of: (DaemonReply, [SecureBytes])?.self) { group in
                group.addTask { try await session.prompt(.passcode(reason: reason)) }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let answered = first else { throw AuthenticationError.userCancel }
                return answered
            }
        } catch let error as AuthenticationError {
            throw error
        } catch {
            throw .systemCancel
        }
        switch reply.0.answer {
        case .passcode where reply.1.count == 1:
            return reply.1[0]
        case .failed(let error): throw error
        default: throw .interactionFailed("the client answered a passcode prompt with something else")
        }
    }
}
