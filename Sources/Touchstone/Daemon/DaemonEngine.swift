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

    /// Sends `call` and waits for its response, answering the daemon's
    /// prompts through `interaction` meanwhile.
    private func exchange(_ call: DaemonCall, secrets: [SecureBytes] = [],
                          interaction: (any AuthenticationInteraction)? = nil) async throws(DaemonFailure) -> (DaemonOutcome, [SecureBytes]) {
        await take()
        defer { give() }
        if connection.hasEnded {
            // Closed between calls, so no request was lost: connect again.
            do {
                connection = DaemonConnection(socket: try FrameSocket.connect(to: socketPath))
                connectionNumber += 1
            } catch {
                throw DaemonFailure(.unreachable, socket: socketPath, reason: error.description)
            }
        }
        return try await connection.call(call, secrets: secrets, interaction: interaction, socketPath: socketPath)
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

    /// The outcome's result, or its error as `E`.
    private func result<E: Error>(_ call: DaemonCall, secrets: [SecureBytes] = [],
                                  interaction: (any AuthenticationInteraction)? = nil,
                                  _ failure: (DaemonFailure) -> E,
                                  _ error: (DaemonOutcome) -> E?) async throws(E) -> (DaemonResult, [SecureBytes]) {
        let outcome: DaemonOutcome
        let returned: [SecureBytes]
        do {
            (outcome, returned) = try await exchange(call, secrets: secrets, interaction: interaction)
        } catch let daemonFailure {
            throw failure(daemonFailure)
        }
        switch outcome {
        case .success(let result): return (result, returned)
        case .refused(let why): throw failure(DaemonFailure(.refused, socket: socketPath, reason: why))
        default:
            throw error(outcome) ?? failure(DaemonFailure(.refused, socket: socketPath, reason: "an answer of another kind than the call's"))
        }
    }

    private func device(_ call: DaemonCall, secrets: [SecureBytes] = [],
                        interaction: (any AuthenticationInteraction)? = nil) async throws(DeviceError) -> DaemonResult {
        try await result(call, secrets: secrets, interaction: interaction, { DeviceError.daemon($0) }) { outcome in
            switch outcome {
            case .device(let e): e
            case .authentication(let e): .authentication(e)
            default: nil
            }
        }.0
    }

    private func keychain(_ call: DaemonCall, secrets: [SecureBytes] = []) async throws(KeychainError) -> (DaemonResult, [SecureBytes]) {
        try await result(call, secrets: secrets, { KeychainError.daemon($0) }) { outcome in
            switch outcome {
            case .keychain(let e): e
            case .authentication(let e): .authentication(e)
            default: nil
            }
        }
    }

    private func authentication(_ call: DaemonCall, interaction: (any AuthenticationInteraction)? = nil) async throws(AuthenticationError) -> DaemonResult {
        try await result(call, interaction: interaction, { AuthenticationError.daemon($0) }) { outcome in
            if case .authentication(let e) = outcome { return e }
            return nil
        }.0
    }

    private func unexpected(_ result: DaemonResult) -> DaemonFailure {
        DaemonFailure(.refused, socket: socketPath, reason: "an answer of another kind than the call's")
    }

    // MARK: - Device

    package func status() async -> Status {
        do {
            if case .status(let status) = try await device(.status) { return status.status }
            throw DeviceError.daemon(unexpected(.none))
        } catch {
            return Self.unreachableStatus(configuration, error as? DeviceError ?? .daemon(unexpected(.none)))
        }
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

    package func passcodeIsSet() async throws(DeviceError) -> Bool {
        guard case .bool(let set) = try await device(.passcodeIsSet) else { throw .daemon(unexpected(.none)) }
        return set
    }

    package func setPasscode(_ passcode: SecureBytes) async throws(DeviceError) {
        _ = try await device(.setPasscode, secrets: [passcode])
    }

    package func changePasscode(from old: SecureBytes, to new: SecureBytes) async throws(DeviceError) {
        _ = try await device(.changePasscode, secrets: [old, new])
    }

    package func removePasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int {
        guard case .count(let n) = try await device(.removePasscode, secrets: [passcode]) else { throw .daemon(unexpected(.none)) }
        return n
    }

    package func enrolledFingers() async throws(DeviceError) -> [Finger] {
        guard case .fingers(let fingers) = try await device(.enrolledFingers) else { throw .daemon(unexpected(.none)) }
        return fingers
    }

    package func enroll(_ finger: Finger, passcode: SecureBytes, timeout: Duration,
                        events: @escaping @Sendable (ScanEvent) -> Void) async throws(DeviceError) {
        _ = try await device(.enroll(finger: finger, timeoutMilliseconds: timeout.wholeMilliseconds), secrets: [passcode],
                             interaction: EventRelay(events))
    }

    package func unenroll(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError) {
        _ = try await device(.unenroll(finger: finger), secrets: [passcode])
    }

    /// An import's prints, stored as the daemon vault's enrolled set.
    func importFingers(_ prints: [EnrolledPrint], reader: ReaderIdentity, passcode: SecureBytes) async throws(DeviceError) {
        let secrets = [passcode] + prints.map { SecureBytes(copying: $0.data) }
        _ = try await device(.importFingers(driver: reader.driver, deviceID: reader.deviceID, fingers: prints.map(\.finger)),
                             secrets: secrets)
    }

    // MARK: - Authentication

    package func availability(_ policy: AuthenticationPolicy) async -> Availability {
        do {
            if case .availability(let availability) = try await authentication(.availability(policy)) { return availability }
            return .unavailable(reason: unexpected(.none).description)
        } catch {
            return .unavailable(reason: error.message ?? "\(error)")
        }
    }

    package func domainState() async throws(AuthenticationError) -> Data? {
        guard case .domainState(let state) = try await authentication(.domainState) else { throw .daemon(unexpected(.none)) }
        return state
    }

    package func authenticate(_ access: AccessControl, reason: String,
                              settings: ContextSettings) async throws(AuthenticationError) -> any EngineGrant {
        let call = DaemonCall.authenticate(access: access, reason: reason, interactive: settings.interaction != nil,
                                           interactionNotAllowed: settings.interactionNotAllowed,
                                           touchTimeoutMilliseconds: settings.touchTimeout.wholeMilliseconds)
        guard case .grant(let id, let passcode, let biometricMatch) = try await authentication(call, interaction: settings.interaction) else {
            throw .daemon(unexpected(.none))
        }
        return DaemonGrant(id: id, passcode: passcode, biometricMatch: biometricMatch, engine: ObjectIdentifier(self),
                           connection: connectionNumber)
    }

    package func grant(for access: AccessControl, reason: String,
                       from authenticator: any BiometricAuthenticating) async throws(AuthenticationError) -> any EngineGrant {
        // The daemon trusts only its own matches and passcode checks.
        throw .invalidContext
    }

    // MARK: - Items

    package func add(_ secret: SecureBytes, attributes: ItemAttributes) async throws(KeychainError) {
        _ = try await keychain(.add(attributes: attributes), secrets: [secret])
    }

    package func openAccess(service: String, account: String) async throws(KeychainError) -> AccessControl {
        guard case .access(let access) = try await keychain(.openAccess(service: service, account: account)).0 else {
            throw .daemon(unexpected(.none))
        }
        return access
    }

    package func secret(service: String, account: String, grant: (any EngineGrant)?) async throws(KeychainError) -> SecureBytes {
        let (result, secrets) = try await keychain(.secret(service: service, account: account, grant: try grantID(grant)))
        guard case .secret = result, secrets.count == 1 else { throw .daemon(unexpected(result)) }
        return secrets[0]
    }

    package func update(service: String, account: String, secret: SecureBytes?, label: String??, comment: String??,
                        generic: Data??, grant: (any EngineGrant)?) async throws(KeychainError) {
        let call = DaemonCall.update(service: service, account: account, newSecret: secret != nil,
                                     label: label.map { FieldChange($0) }, comment: comment.map { FieldChange($0) },
                                     generic: generic.map { FieldChange($0) }, grant: try grantID(grant))
        _ = try await keychain(call, secrets: secret.map { [$0] } ?? [])
    }

    package func delete(service: String, account: String) async throws(KeychainError) {
        _ = try await keychain(.delete(service: service, account: account))
    }

    package func items(service: String?) async throws(KeychainError) -> [ListedItem] {
        guard case .items(let items) = try await keychain(.items(service: service)).0 else { throw .daemon(unexpected(.none)) }
        return items
    }

    package func attributes(service: String, account: String) async throws(KeychainError) -> ItemAttributes {
        guard case .attributes(let attributes) = try await keychain(.attributes(service: service, account: account)).0 else {
            throw .daemon(unexpected(.none))
        }
        return attributes
    }

    // MARK: - Items by reference

    package func search(_ query: [String: String]) async throws(KeychainError) -> [ReferencedItem] {
        guard case .referenced(let items) = try await keychain(.search(query: query)).0 else { throw .daemon(unexpected(.none)) }
        return items
    }

    package func add(_ secret: SecureBytes, attributes: ItemAttributes,
                     replace: Bool) async throws(KeychainError) -> (ItemReference, replaced: [ItemReference]) {
        let (result, _) = try await keychain(.addItem(attributes: attributes, replace: replace), secrets: [secret])
        guard case .added(let reference, let replaced) = result else { throw .daemon(unexpected(result)) }
        return (reference, replaced)
    }

    package func item(_ reference: ItemReference) async throws(KeychainError) -> ReferencedItem {
        let (result, _) = try await keychain(.item(reference))
        guard case .referenced(let items) = result, items.count == 1 else { throw .daemon(unexpected(result)) }
        return items[0]
    }

    package func openAccess(_ reference: ItemReference) async throws(KeychainError) -> AccessControl {
        guard case .access(let access) = try await keychain(.openItemAccess(reference)).0 else { throw .daemon(unexpected(.none)) }
        return access
    }

    package func secret(_ reference: ItemReference, grant: (any EngineGrant)?) async throws(KeychainError) -> (SecureBytes, ItemAttributes) {
        let (result, secrets) = try await keychain(.itemSecret(reference, grant: try grantID(grant)))
        guard case .attributes(let attributes) = result, secrets.count == 1 else { throw .daemon(unexpected(result)) }
        return (secrets[0], attributes)
    }

    package func update(_ reference: ItemReference, secret: SecureBytes?, label: String??, searchAttributes: [String: String]?,
                        contentType: String??, grant: (any EngineGrant)?) async throws(KeychainError) {
        let call = DaemonCall.updateItem(reference, newSecret: secret != nil, label: label.map { FieldChange($0) },
                                         searchAttributes: searchAttributes, contentType: contentType.map { FieldChange($0) },
                                         grant: try grantID(grant))
        _ = try await keychain(call, secrets: secret.map { [$0] } ?? [])
    }

    package func delete(_ reference: ItemReference) async throws(KeychainError) {
        _ = try await keychain(.deleteItem(reference))
    }

    // MARK: - ssh keys

    package func createSSHKey(name: String, comment: String, access: AccessControl) async throws(KeychainError) -> SSHKeyInfo {
        let result = try await keychain(.createSSHKey(name: name, comment: comment, access: access)).0
        guard case .sshKey(let info) = result else { throw .daemon(unexpected(result)) }
        return info
    }

    package func sshKeys() async throws(KeychainError) -> [SSHKeyInfo] {
        let result = try await keychain(.sshKeys).0
        guard case .sshKeys(let keys) = result else { throw .daemon(unexpected(result)) }
        return keys
    }

    package func deleteSSHKey(name: String) async throws(KeychainError) {
        _ = try await keychain(.deleteSSHKey(name: name))
    }

    package func sshKeyOpenAccess(name: String) async throws(KeychainError) -> AccessControl {
        let result = try await keychain(.sshKeyOpenAccess(name: name)).0
        guard case .access(let access) = result else { throw .daemon(unexpected(result)) }
        return access
    }

    package func signSSH(name: String, digest: [UInt8], grant: (any EngineGrant)?) async throws(KeychainError) -> SSHSignature {
        let result = try await keychain(.signSSH(name: name, digest: digest, grant: try grantID(grant))).0
        guard case .signature(let r, let s) = result else { throw .daemon(unexpected(result)) }
        return SSHSignature(r: r, s: s)
    }

    /// A grant's id on this connection; a grant of another engine proves
    /// nothing here.
    private func grantID(_ grant: (any EngineGrant)?) throws(KeychainError) -> UInt64? {
        guard let grant else { return nil }
        guard let own = grant as? DaemonGrant, own.engine == ObjectIdentifier(self) else {
            throw .authentication(.invalidContext)
        }
        // A grant of a connection the daemon closed since is gone with it:
        // authenticate again.
        guard own.connection == connectionNumber else { throw .interactionNotAllowed }
        return own.id
    }

}

/// A grant the daemon holds for one connection: `id` names it there.
struct DaemonGrant: EngineGrant {
    let id: UInt64
    let passcode: Bool
    let biometricMatch: Bool
    let engine: ObjectIdentifier
    /// The engine's connection it was made on.
    let connection: Int

    func satisfies(_ access: AccessControl) -> Bool {
        access.alternatives.contains { alternative in
            alternative.allSatisfy { flag in flag == .devicePasscode ? passcode : biometricMatch }
        }
    }
}

/// Enrolment's scan events, delivered as an interaction's.
private struct EventRelay: AuthenticationInteraction {
    let events: @Sendable (ScanEvent) -> Void
    init(_ events: @escaping @Sendable (ScanEvent) -> Void) { self.events = events }
    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
    }
    func scanEvent(_ event: ScanEvent) async { events(event) }
    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes { throw .notInteractive }
}
