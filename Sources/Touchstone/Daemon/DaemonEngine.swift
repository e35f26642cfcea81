import Foundation
import Synchronization
import TouchstoneFingerprint
import TouchstoneSecure

/// The engine that asks `touchstoned`: every call is one request on the
/// daemon's socket, answered by the daemon's own in-process engine for this
/// process's uid. Passcodes are read here (the interaction) and sent only
/// over the socket; touches happen at the daemon's reader. Grants are the
/// daemon's, held for this connection.
package actor DaemonEngine: Engine {
    package nonisolated let configuration: Configuration
    package nonisolated var taskExecutor: (any TaskExecutor)? { nil }
    let socketPath: String
    /// The connection; replaced when the daemon closed it between calls
    /// (it closes idle connections after its timeout), so a long-lived
    /// client (the Secret Service provider, the ssh-agent) keeps working.
    /// Grants of the closed one are gone with it.
    private var connection: DaemonConnection
    /// Which connection this is (grants name the one they were made on).
    private var connectionNumber = 0
    /// One call at a time on the connection: callers wait their turn.
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    private init(configuration: Configuration, socketPath: String, connection: DaemonConnection) {
        self.configuration = configuration
        self.socketPath = socketPath
        self.connection = connection
    }

    /// Connects to the daemon at `socket`.
    package static func open(_ configuration: Configuration, socket: String) throws(DeviceError) -> DaemonEngine {
        do {
            let connection = DaemonConnection(socket: try FrameSocket.connect(to: socket))
            return DaemonEngine(configuration: configuration, socketPath: socket, connection: connection)
        } catch {
            throw .daemon(DaemonFailure(.unreachable, socket: socket, reason: error.description))
        }
    }

    deinit { connection.close() }

    package func close() async {}

    // MARK: - The exchange

    /// Sends `request` and waits for its outcome, answering the daemon's
    /// prompts through `interaction` meanwhile. One call at a time on the
    /// connection: callers wait their turn.
    package func call<R: EngineOperation>(_ request: R,
                                          interaction: (any AuthenticationInteraction)?) async throws(R.Failure) -> R.Response {
        await take()
        defer { give() }
        if let presented = request.grant {
            // Only a grant this connection holds names one the daemon has.
            guard let issuer = presented.issuer, issuer.engine == ObjectIdentifier(self), presented.id != nil else {
                throw R.Failure(.invalidContext)
            }
            // A grant of a connection the daemon closed since is gone with
            // it: authenticate again.
            guard issuer.connection == connectionNumber else { throw R.Failure(.notInteractive) }
        }
        if connection.hasEnded {
            // Closed between calls, so no request was lost: connect again.
            try reconnect(request)
        }
        var outcome = try await exchange(request, interaction)
        if case .refused(DaemonWire.idleClosing) = outcome {
            // The daemon closed the connection as idle as the request went,
            // before it read it: it was not carried out. Once more, on a new
            // connection.
            try reconnect(request)
            outcome = try await exchange(request, interaction)
        }
        switch outcome {
        case .success(var response):
            let issuer = GrantReference.Issuer(engine: ObjectIdentifier(self), connection: connectionNumber)
            R.issue(&response) { $0.issuer = issuer }
            return response
        case .failure(let failure): throw failure
        case .refused(let why): throw .daemon(DaemonFailure(.refused, socket: socketPath, reason: why))
        }
    }

    /// The request on the connection, and its outcome.
    private func exchange<R: EngineOperation>(_ request: R, _ interaction: (any AuthenticationInteraction)?) async throws(R.Failure) -> Outcome<R> {
        do {
            return try await connection.call(request, interaction: interaction, socketPath: socketPath)
        } catch {
            throw .daemon(error)
        }
    }

    /// A new connection for `request`; its grants were the old one's, so
    /// a request presenting one must authenticate again.
    private func reconnect<R: EngineOperation>(_ request: R) throws(R.Failure) {
        do {
            connection = DaemonConnection(socket: try FrameSocket.connect(to: socketPath))
            connectionNumber += 1
        } catch {
            throw .daemon(DaemonFailure(.unreachable, socket: socketPath, reason: error.description))
        }
        if request.grant != nil { throw R.Failure(.notInteractive) }
    }

    private func take() async {
        if !busy {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func give() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }

    /// What `status` says when the daemon does not answer: every part
    /// unavailable, the problem the daemon's.
    static func unreachableStatus(_ configuration: Configuration, _ error: DeviceError) -> Status {
        let why = error.message ?? "\(error)"
        return Status(home: configuration.home.path,
                      reader: .init(available: false, selection: "\(configuration.reader)", reason: why),
                      tpm: .init(available: false, tcti: "\(configuration.tpm)", reason: why),
                      vault: .init(available: false, reason: why), fingers: [], problem: error)
    }

    package func grant(for access: AccessControl, reason: String,
                       from authenticator: any BiometricAuthenticating) async throws(AuthenticationError) -> any EngineGrant {
        // The daemon trusts only its own matches and passcode checks.
        throw .invalidContext
    }
}

/// Enrolment's scan events, delivered as an interaction's.
struct EventRelay: AuthenticationInteraction {
    let events: @Sendable (ScanEvent) -> Void
    init(_ events: @escaping @Sendable (ScanEvent) -> Void) { self.events = events }
    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }
    func scanEvent(_ event: ScanEvent) async { events(event) }
    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes { throw .notInteractive }
}
