import Foundation
import Synchronization
import TouchstoneFingerprint
import TouchstoneSecure
#if canImport(Glibc)
import Glibc
#endif

/// One client connection: its uid and pid as the kernel gave them, one
/// call at a time, the prompts of that call, and the grants it holds
/// (they die with the connection).
final class DaemonSession: Sendable {
    let server: DaemonServer
    let socket: FrameSocket
    let uid: uid_t
    let pid: pid_t
    /// The program's name as /proc says (comm), for the log and prompts.
    let program: String

    private struct State {
        var inFlight: Task<Void, Never>?
        var prompts: [UInt32: CheckedContinuation<(DaemonReply, [SecureBytes]), any Error>] = [:]
        var nextPrompt: UInt32 = 1
        var grants: [UInt64: any EngineGrant] = [:]
    }
    private let state = Locked(State())
    private let busy = Atomic<Bool>(false)

    init(server: DaemonServer, socket: FrameSocket, uid: uid_t, pid: pid_t) {
        self.server = server
        self.socket = socket
        self.uid = uid
        self.pid = pid
        program = Self.comm(of: pid, socket: socket)
    }

    /// The peer's command name from /proc/PID/comm. With a pidfd of the
    /// peer (SO_PEERPIDFD), it is checked to be that process's: a pid
    /// reused by another process after the client exited reads as "?".
    private static func comm(of pid: pid_t, socket: FrameSocket) -> String {
        let pidfd = socket.peerPIDFD()
        defer { if let pidfd { close(pidfd) } }
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8) else { return "?" }
        if let pidfd {
            // fdinfo's "Pid:" is the process's pid while it lives, -1 after.
            let info = (try? String(contentsOfFile: "/proc/self/fdinfo/\(pidfd)", encoding: .utf8)) ?? ""
            let live = info.split(separator: "\n").first { $0.hasPrefix("Pid:") }?
                .split(separator: "\t").last.map(String.init) == String(pid)
            if !live { return "?" }
        }
        return String(text.trimmingCharacters(in: .whitespacesAndNewlines).prefix(32))
    }

    func start() {
        // An idle timeout ends the connection only between calls.
        let inbox = FrameInbox(reading: socket, idle: server.settings.timeout, stall: server.settings.timeout,
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
        while true {
            let frame: DaemonWire.Frame
            do {
                frame = try await inbox.next()
            } catch .closed {
                return
            } catch .timedOut {
                // Idle, or a frame that stalled: a client connects again when it has a call.
                log("silent for \(server.settings.timeout): connection closed")
                return
            } catch {
                log("protocol error: \(error); connection closed")
                try? socket.send(try DaemonWire.Frame(.response, DaemonOutcome.refused(error.description)))
                return
            }
            switch frame.kind {
            case .request:
                guard !busy.exchange(true, ordering: .relaxed) else {
                    log("a second request while one is in flight; connection closed")
                    return
                }
                let task = Task { await self.carryOut(frame) }
                state.withLock { $0.inFlight = task }
            case .reply:
                guard let reply = try? frame.decode(DaemonReply.self),
                      let waiter = state.withLock({ $0.prompts.removeValue(forKey: reply.id) }) else {
                    continue  // a reply to a prompt already cancelled
                }
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
        let (outcome, secrets): (DaemonOutcome, [SecureBytes])
        let callName: String
        do {
            let request = try frame.decode(DaemonRequest.self)
            callName = request.call.name
            guard request.call.secretCount.contains(frame.secrets.count) else {
                throw DaemonWireError.malformed("\(request.call.name) with \(frame.secrets.count) secrets")
            }
            (outcome, secrets) = await perform(request.call, frame.secrets)
            log("\(callName): \(Self.summary(outcome))" + (request.call.reason.map { " (reason: \(Self.clean($0)))" } ?? ""))
        } catch {
            log("refused: \(error)")
            finished()
            try? socket.send(try DaemonWire.Frame(.response, DaemonOutcome.refused("\(error)")))
            socket.shut()
            return
        }
        finished()
        do {
            try socket.send(try DaemonWire.Frame(.response, outcome, secrets: secrets))
        } catch {
            log("\(callName): the answer could not be sent (\(error))")
        }
    }

    // MARK: - Calls

    private func perform(_ call: DaemonCall, _ secrets: [SecureBytes]) async -> (DaemonOutcome, [SecureBytes]) {
        let engine: InProcessEngine
        do {
            engine = try await server.users.engine(for: uid, gates: server.gates)
        } catch {
            switch call {
            case .status: break  // reported below, part by part
            default: return (Self.outcome(error, for: call), [])
            }
            var status = await InProcessEngine.status(of: await server.users.configuration(for: uid))
            status.reader.selection = server.settings.readerChoice
            return (.success(.status(DaemonStatus(status))), [])
        }
        do {
            let result = try await perform(call, secrets, on: engine)
            return result
        } catch {
            return (Self.outcome(error, for: call), [])
        }
    }

    private func perform(_ call: DaemonCall, _ secrets: [SecureBytes],
                         on engine: InProcessEngine) async throws -> (DaemonOutcome, [SecureBytes]) {
        func done(_ result: DaemonResult, _ secrets: [SecureBytes] = []) -> (DaemonOutcome, [SecureBytes]) {
            (.success(result), secrets)
        }
        let warm = server.users.warm.of(uid)
        switch call {
        case .status:
            var status = await engine.status()
            status.reader.selection = server.settings.readerChoice
            return done(.status(DaemonStatus(status)))
        case .passcodeIsSet:
            return done(.bool(try await engine.passcodeIsSet()))
        case .setPasscode:
            warm.forget()
            try await engine.setPasscode(secrets[0])
            server.gate.recordSuccess(uid, secrets[0])
            return done(.none)
        case .changePasscode:
            warm.forget()
            try await gated(secrets[0]) { try await engine.changePasscode(from: secrets[0], to: secrets[1]) }
            server.gate.recordSuccess(uid, secrets[1])
            return done(.none)
        case .removePasscode:
            warm.forget()
            let removed = try await gated(secrets[0]) { try await engine.removePasscode(secrets[0]) }
            server.gate.forget(uid)
            return done(.count(removed))
        case .enrolledFingers:
            return done(.fingers(try await engine.enrolledFingers()))
        case .enroll(let finger, let milliseconds):
            defer { Task { await engine.close() } }
            try await gated(secrets[0]) {
                try await engine.enroll(finger, passcode: secrets[0], timeout: Self.touchTimeout(milliseconds)) { [socket] event in
                    try? socket.send(try DaemonWire.Frame(.event, event))
                }
            }
            return done(.none)
        case .unenroll(let finger):
            try await gated(secrets[0]) { try await engine.unenroll(finger, passcode: secrets[0]) }
            return done(.none)
        case .availability(let policy):
            let availability = await engine.availability(policy)
            await engine.close()
            return done(.availability(availability))
        case .domainState:
            return done(.domainState(try await engine.domainState()))
        case .getSecret(let service, let account, let reason, let milliseconds):
            return try await getSecret(service: service, account: account, reason: reason, milliseconds: milliseconds, on: engine)
        case .authenticate(let access, let reason, let interactive, let interactionNotAllowed, let milliseconds):
            let grant = try await authenticate(access, reason: reason, interactive: interactive,
                                               interactionNotAllowed: interactionNotAllowed, milliseconds: milliseconds, on: engine)
            let id = state.withLock { state -> UInt64 in
                var id = UInt64.random(in: 1...UInt64.max)
                while state.grants[id] != nil { id = UInt64.random(in: 1...UInt64.max) }
                state.grants[id] = grant
                return id
            }
            let proved = (passcode: grant.satisfies(.devicePasscode), biometric: grant.satisfies(.biometryAny))
            return done(.grant(id: id, passcode: proved.passcode, biometricMatch: proved.biometric))
        case .add(let attributes):
            try await engine.add(secrets[0], attributes: attributes)
            return done(.none)
        case .openAccess(let service, let account):
            return done(.access(try await engine.openAccess(service: service, account: account)))
        case .secret(let service, let account, let grant):
            let secret = try await engine.secret(service: service, account: account, grant: try self.grant(grant))
            return done(.secret, [secret])
        case .update(let service, let account, let newSecret, let label, let comment, let generic, let grant):
            try await engine.update(service: service, account: account, secret: newSecret ? secrets[0] : nil,
                                    label: label.map(\.value), comment: comment.map(\.value), generic: generic.map(\.value),
                                    grant: try self.grant(grant))
            return done(.none)
        case .delete(let service, let account):
            try await engine.delete(service: service, account: account)
            return done(.none)
        case .items(let service):
            return done(.items(try await engine.items(service: service)))
        case .attributes(let service, let account):
            return done(.attributes(try await engine.attributes(service: service, account: account)))
        case .search(let query):
            return done(.referenced(try await engine.search(query)))
        case .addItem(let attributes, let replace):
            let (reference, replaced) = try await engine.add(secrets[0], attributes: attributes, replace: replace)
            return done(.added(reference, replaced: replaced))
        case .item(let reference):
            return done(.referenced([try await engine.item(reference)]))
        case .openItemAccess(let reference):
            return done(.access(try await engine.openAccess(reference)))
        case .itemSecret(let reference, let grant):
            let (secret, attributes) = try await engine.secret(reference, grant: try self.grant(grant))
            return done(.attributes(attributes), [secret])
        case .updateItem(let reference, let newSecret, let label, let searchAttributes, let contentType, let grant):
            try await engine.update(reference, secret: newSecret ? secrets[0] : nil, label: label.map(\.value),
                                    searchAttributes: searchAttributes, contentType: contentType.map(\.value),
                                    grant: try self.grant(grant))
            return done(.none)
        case .deleteItem(let reference):
            try await engine.delete(reference)
            return done(.none)
        case .createSSHKey(let name, let comment, let access):
            return done(.sshKey(try await engine.createSSHKey(name: name, comment: comment, access: access)))
        case .sshKeys:
            return done(.sshKeys(try await engine.sshKeys()))
        case .deleteSSHKey(let name):
            try await engine.deleteSSHKey(name: name)
            return done(.none)
        case .sshKeyOpenAccess(let name):
            return done(.access(try await engine.sshKeyOpenAccess(name: name)))
        case .signSSH(let name, let digest, let grant):
            let signature = try await engine.signSSH(name: name, digest: digest, grant: try self.grant(grant))
            return done(.signature(r: signature.r, s: signature.s))
        case .importFingers(let driver, let deviceID, let fingers):
            guard fingers.count <= 10, Set(fingers).count == fingers.count else {
                throw DeviceError.invalidPasscode("an import carries at most ten fingers, each once")
            }
            let reader = ReaderIdentity(driver: driver, deviceID: deviceID)
            let prints = zip(fingers, secrets.dropFirst()).map { finger, data in
                EnrolledPrint(finger: finger, reader: reader, data: data.withUnsafeBytes { Array($0) })
            }
            try await gated(secrets[0]) { try await engine.importFingers(prints, reader: reader, passcode: secrets[0]) }
            return done(.none)
        }
    }

    /// An authentication for `access`, the passcode's outcome told to the
    /// throttle.
    private func authenticate(_ access: AccessControl, reason: String, interactive: Bool, interactionNotAllowed: Bool,
                              milliseconds: Int, on engine: InProcessEngine) async throws -> any EngineGrant {
        let settings = ContextSettings(interaction: interactive ? SessionInteraction(session: self) : nil,
                                       interactionNotAllowed: interactionNotAllowed,
                                       touchTimeout: Self.touchTimeout(milliseconds))
        let grant: any EngineGrant
        do {
            grant = try await engine.authenticate(access, reason: reason, settings: settings)
        } catch {
            await engine.close()
            settleAuthentication(failure: error)
            throw error
        }
        await engine.close()
        settleAuthentication(failure: nil)
        return grant
    }

    /// Tells the throttle what an authentication did with a typed passcode:
    /// a passcode the daemon could not judge (no verifier yet) is recorded
    /// when the TPM took it and counted when it refused it; a right one
    /// after wrong ones clears them.
    private func settleAuthentication(failure: (any Error)?) {
        let (tried, passcode) = takePasscode()
        if let failure {
            if case .authenticationFailed? = failure as? AuthenticationError, case .undecided = tried {
                server.gate.recordFailure(uid)
            }
            return
        }
        switch (tried, passcode) {
        case (.undecided, let passcode?): server.gate.recordSuccess(uid, passcode)
        case (.verified(clearing: true), _): server.gate.clearFailures(uid)
        default: break
        }
    }

    /// `touchstone get` in one call (`DaemonCall.getSecret`), done by the
    /// engine in one call on its thread; each step's failure as the client
    /// reads it from the separate calls (openAccess, authenticate, secret),
    /// so the command says the same either way.
    private func getSecret(service: String, account: String, reason: String, milliseconds: Int,
                           on engine: InProcessEngine) async throws -> (DaemonOutcome, [SecureBytes]) {
        let settings = ContextSettings(interaction: SessionInteraction(session: self), interactionNotAllowed: false,
                                       touchTimeout: Self.touchTimeout(milliseconds))
        let (step, authenticated, result) = await engine.getSecret(service: service, account: account, reason: reason,
                                                                   settings: settings)
        if authenticated {
            if case .failure(let error) = result, step == .authentication {
                settleAuthentication(failure: error)
            } else {
                settleAuthentication(failure: nil)
            }
        }
        switch result {
        case .success(let secret):
            return (.success(.secret), [secret])
        case .failure(let error):
            let outcome = Self.outcome(error, as: step == .authentication ? .authentication : .keychain)
            if case .authentication(let error) = outcome {
                return (.keychain(step == .authentication ? KeychainError(error) : .authentication(error)), [])
            }
            return (outcome, [])
        }
    }

    // MARK: - The passcode gate

    /// Runs `body`, a call that the TPM checks `passcode` for, behind the
    /// daemon's throttle and verifier: refused while throttled; a passcode
    /// the verifier knows is wrong never reaches the TPM.
    private func gated<R>(_ passcode: SecureBytes, _ body: () async throws -> R) async throws -> R {
        let gate = server.gate
        let earlier = try gate.check(uid)
        let known = gate.verify(uid, passcode)
        if known == false {
            gate.recordFailure(uid)
            throw DeviceError.authentication(.authenticationFailed)
        }
        do {
            let result = try await body()
            if known == nil { gate.recordSuccess(uid, passcode) } else if earlier > 0 { gate.clearFailures(uid) }
            return result
        } catch DeviceError.authentication(.authenticationFailed) where known == nil {
            gate.recordFailure(uid)
            throw DeviceError.authentication(.authenticationFailed)
        }
    }

    /// `verified(clearing:)`: the verifier knew it, and wrong ones came
    /// before it (a success must clear them).
    enum PasscodeTried: Sendable { case none, undecided, verified(clearing: Bool) }

    /// What the call in flight did with a passcode prompt's answer.
    private let passcodeTried = Locked<(PasscodeTried, SecureBytes?)>((.none, nil))

    /// Judges a passcode typed at a prompt of this call: throws while
    /// throttled or when the verifier knows it is wrong (counted).
    func admitTypedPasscode(_ passcode: SecureBytes) throws(AuthenticationError) {
        let gate = server.gate
        let earlier = try gate.check(uid)
        // The warm passcode is known right without Argon2id (the engine
        // then opens nothing with it that the TPM did not open for it).
        if server.users.warm.of(uid).matches(passcode) {
            passcodeTried.withLock { $0 = (.verified(clearing: earlier > 0), nil) }
            return
        }
        switch gate.verify(uid, passcode) {
        case false?:
            gate.recordFailure(uid)
            throw .authenticationFailed
        case true?: passcodeTried.withLock { $0 = (.verified(clearing: earlier > 0), nil) }
        case nil: passcodeTried.withLock { $0 = (.undecided, passcode) }
        }
    }

    /// Checks the throttle before a passcode prompt is shown.
    func checkThrottle() throws(AuthenticationError) { try server.gate.check(uid) }

    /// What the call's prompt did with a passcode, and the passcode; reset.
    private func takePasscode() -> (PasscodeTried, SecureBytes?) {
        passcodeTried.withLock { state in
            defer { state = (.none, nil) }
            return state
        }
    }

    /// A grant this connection holds; an id it does not hold proves nothing.
    private func grant(_ id: UInt64?) throws(KeychainError) -> (any EngineGrant)? {
        guard let id else { return nil }
        guard let grant = state.withLock({ $0.grants[id] }) else { throw .authentication(.invalidContext) }
        return grant
    }

    private static func touchTimeout(_ milliseconds: Int) -> Duration {
        .milliseconds(min(max(milliseconds, 1), 3_600_000))
    }

    /// An engine error as the outcome the call's engine method throws.
    private static func outcome(_ error: any Error, for call: DaemonCall) -> DaemonOutcome {
        let kind: EngineErrorKind = switch call {
        case .add, .openAccess, .secret, .getSecret, .update, .delete, .items, .attributes,
             .search, .addItem, .item, .openItemAccess, .itemSecret, .updateItem, .deleteItem,
             .createSSHKey, .sshKeys, .deleteSSHKey, .sshKeyOpenAccess, .signSSH: .keychain
        case .availability, .domainState, .authenticate: .authentication
        default: .device
        }
        return outcome(error, as: kind)
    }

    /// Which of the engine's error types a call's method throws.
    private enum EngineErrorKind { case keychain, authentication, device }

    private static func outcome(_ error: any Error, as kind: EngineErrorKind) -> DaemonOutcome {
        switch error {
        case let e as DeviceError:
            switch kind {
            case .keychain: return .keychain(Self.keychain(e))
            case .authentication:
                if case .authentication(let a) = e { return .authentication(a) }
                return .authentication(Self.authentication(e))
            case .device: return .device(e)
            }
        case let e as KeychainError: return .keychain(e)
        case let e as AuthenticationError: return .authentication(e)
        default: return .refused("\(error)")
        }
    }

    private static func keychain(_ e: DeviceError) -> KeychainError {
        switch e {
        case .authentication(let a): .authentication(a)
        case .tpm(let t): .tpm(t)
        case .storage(let s): .storage(s)
        case .corrupted(let c): .corrupted(c)
        case .daemon(let d): .daemon(d)
        default: .corrupted(e.message ?? "\(e)")
        }
    }

    private static func authentication(_ e: DeviceError) -> AuthenticationError {
        switch e {
        case .tpm(let t): .tpm(t)
        case .storage(let s): .storage(s)
        case .corrupted(let c): .corrupted(c)
        case .daemon(let d): .daemon(d)
        default: .corrupted(e.message ?? "\(e)")
        }
    }

    private static func summary(_ outcome: DaemonOutcome) -> String {
        switch outcome {
        case .success: "ok"
        case .device(let e): "failed: \(e.message ?? "cancelled")"
        case .keychain(let e): "failed: \(e.message ?? "cancelled")"
        case .authentication(let e): "failed: \(e.message ?? "cancelled")"
        case .refused(let why): "refused: \(why)"
        }
    }

    /// Text a client gave, fit for one log line.
    static func clean(_ text: String) -> String {
        String(text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : Character($0) }.prefix(200))
    }

    func log(_ line: String) {
        server.log.write("uid \(uid) pid \(pid) (\(Self.clean(program))): \(line)")
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
                    try socket.send(try DaemonWire.Frame(.prompt, DaemonPrompt(id: id, need: need)))
                } catch {
                    if let waiter = state.withLock({ $0.prompts.removeValue(forKey: id) }) { waiter.resume(throwing: error) }
                }
            }
        } onCancel: {
            if let waiter = state.withLock({ $0.prompts.removeValue(forKey: id) }) {
                try? socket.send(try DaemonWire.Frame(.cancel, DaemonCancel(id: id)))
                waiter.resume(throwing: CancellationError())
            }
        }
    }
}

extension DaemonCall {
    /// The reason a call shows the person, when it has one.
    var reason: String? {
        switch self {
        case .authenticate(_, let reason, _, _, _), .getSecret(_, _, let reason, _): reason
        default: nil
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
        try? session.socket.send(try DaemonWire.Frame(.event, event))
    }

    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes {
        try session.checkThrottle()
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
            try session.admitTypedPasscode(reply.1[0])
            return reply.1[0]
        case .failed(let error): throw error
        default: throw .interactionFailed("the client answered a passcode prompt with something else")
        }
    }
}
