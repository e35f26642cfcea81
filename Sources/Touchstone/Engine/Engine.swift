import Foundation

/// The seam between the public API and what does the work: the in-process
/// engine (Vault, TPM and reader in this process) today, a client of
/// `touchstoned` next. Every front end (the CLI, the Secret Service, the
/// ssh-agent, apps) talks to `TouchstoneDevice`, `Keychain` and
/// `AuthenticationContext`, which talk to an engine; none sees which.
///
/// Errors are the public ones. Authentication yields a grant (the engine's
/// proof of what was shown), which an `AuthenticationContext` may keep for
/// its reuse window and which item reads present.
package protocol Engine: AnyObject, Sendable {
    var configuration: Configuration { get }
    /// Where the public API runs its own steps of an operation (nil: the
    /// caller's executor): the in-process engine's thread.
    var taskExecutor: (any TaskExecutor)? { get }

    // MARK: Device

    /// What the device has now, without prompting.
    func status() async -> Status
    func passcodeIsSet() async throws(DeviceError) -> Bool
    func setPasscode(_ passcode: SecureBytes) async throws(DeviceError)
    func changePasscode(from old: SecureBytes, to new: SecureBytes) async throws(DeviceError)
    /// Returns how many items went with the passcode.
    func removePasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int
    func enrolledFingers() async throws(DeviceError) -> [Finger]
    func enroll(_ finger: Finger, passcode: SecureBytes, timeout: Duration,
                events: @escaping @Sendable (ScanEvent) -> Void) async throws(DeviceError)
    /// Removes `finger`; nil: every finger.
    func unenroll(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError)
    /// Releases the reader (the engine opens it again when needed).
    func close() async

    // MARK: Authentication

    func availability(_ policy: AuthenticationPolicy) async -> Availability
    /// The enrolled-finger set's opaque state; nil without a passcode.
    func domainState() async throws(AuthenticationError) -> Data?
    /// Authenticates for `access` (a touch, the passcode, or both, as it
    /// asks) through `settings`' interaction.
    func authenticate(_ access: AccessControl, reason: String,
                      settings: ContextSettings) async throws(AuthenticationError) -> any EngineGrant
    /// A grant for `access` from an authenticator that is not one of this
    /// engine's contexts (an `AuthenticationContext` goes through
    /// `authenticate`, with its reuse window).
    func grant(for access: AccessControl, reason: String,
               from authenticator: any BiometricAuthenticating) async throws(AuthenticationError) -> any EngineGrant

    // MARK: Items

    func add(_ secret: SecureBytes, attributes: ItemAttributes) async throws(KeychainError)
    /// The item's ways in that are still open, as an access control
    /// (`itemInvalidated` when none is).
    func openAccess(service: String, account: String) async throws(KeychainError) -> AccessControl
    func secret(service: String, account: String, grant: (any EngineGrant)?) async throws(KeychainError) -> SecureBytes
    func update(service: String, account: String, secret: SecureBytes?, label: String??, comment: String??,
                generic: Data??, grant: (any EngineGrant)?) async throws(KeychainError)
    func delete(service: String, account: String) async throws(KeychainError)
    func items(service: String?) async throws(KeychainError) -> [ListedItem]
    func attributes(service: String, account: String) async throws(KeychainError) -> ItemAttributes

    // MARK: Items by reference (the Secret Service)

    /// Items whose attribute set holds every pair of `query` (empty: all).
    func search(_ query: [String: String]) async throws(KeychainError) -> [ReferencedItem]
    /// Adds beside equal items, or (`replace`) in their place.
    func add(_ secret: SecureBytes, attributes: ItemAttributes,
             replace: Bool) async throws(KeychainError) -> (ItemReference, replaced: [ItemReference])
    func item(_ reference: ItemReference) async throws(KeychainError) -> ReferencedItem
    func openAccess(_ reference: ItemReference) async throws(KeychainError) -> AccessControl
    /// The item's secret and its attributes.
    func secret(_ reference: ItemReference, grant: (any EngineGrant)?) async throws(KeychainError) -> (SecureBytes, ItemAttributes)
    func update(_ reference: ItemReference, secret: SecureBytes?, label: String??, searchAttributes: [String: String]?,
                contentType: String??, grant: (any EngineGrant)?) async throws(KeychainError)
    func delete(_ reference: ItemReference) async throws(KeychainError)

    // MARK: ssh keys

    func createSSHKey(name: String, comment: String, access: AccessControl) async throws(KeychainError) -> SSHKeyInfo
    func sshKeys() async throws(KeychainError) -> [SSHKeyInfo]
    func deleteSSHKey(name: String) async throws(KeychainError)
    /// The key's ways to sign that are still open (`itemInvalidated` when none is).
    func sshKeyOpenAccess(name: String) async throws(KeychainError) -> AccessControl
    /// The TPM's ECDSA signature of the SHA-256 `digest` with the key.
    func signSSH(name: String, digest: [UInt8], grant: (any EngineGrant)?) async throws(KeychainError) -> SSHSignature
}

/// What an engine proved in one authentication, as it presents it again:
/// for the in-process engine the vault's proof (it holds the passcode class
/// key when the passcode was checked, wiped with it).
package protocol EngineGrant: Sendable {
    /// Whether this grant opens what `access` asks.
    func satisfies(_ access: AccessControl) -> Bool
}

/// A context's settings, as one authentication reads them.
package struct ContextSettings: Sendable {
    package var interaction: (any AuthenticationInteraction)?
    package var interactionNotAllowed: Bool
    package var touchTimeout: Duration
}

extension Engine {
    /// Runs `body`, the public API's own steps of one operation, on the
    /// engine's task executor, so that its engine calls need no thread
    /// switch (DedicatedThread). `body` keeps the caller's isolation.
    func operation<R, E: Error>(isolation: isolated (any Actor)? = #isolation,
                                _ body: () async throws(E) -> R) async throws(E) -> R {
        try await withTaskExecutorPreference(taskExecutor, isolation: isolation, operation: body)
    }
}
