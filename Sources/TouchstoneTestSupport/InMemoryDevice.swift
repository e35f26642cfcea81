import Foundation
import Synchronization
import Touchstone

extension TouchstoneDevice {
    /// A device for an app's own unit tests: items kept in memory, no TPM,
    /// no reader, no state folder. A read of an item whose access control
    /// asks for anything authenticates through the context given to the
    /// read (a `StubBiometrics`, say) or, without one, `authenticator`;
    /// its success opens the item, its error is the read's error. Item
    /// semantics (duplicates, not found, limits, listing) are the real
    /// keychain's. Nothing it does protects anything: it is a test double.
    public static func inMemory(authenticator: some BiometricAuthenticating = StubBiometrics()) -> TouchstoneDevice {
        TouchstoneDevice(engine: InMemoryEngine(authenticator: authenticator))
    }
}

/// The engine behind `TouchstoneDevice.inMemory`.
final class InMemoryEngine: Engine {
    let configuration = Configuration(home: URL(fileURLWithPath: "/nonexistent/touchstone-in-memory"),
                                      tpm: .tcti("none"), reader: .id("none"), user: "test")
    let taskExecutor: (any TaskExecutor)? = nil
    private let authenticator: any BiometricAuthenticating

    private struct Item {
        var attributes: ItemAttributes
        var secret: SecureBytes
    }

    private struct State {
        var items: [String: Item] = [:]
        var passcode: SecureBytes?
        var fingers: [Finger] = []
    }

    private let state = Mutex(State())

    init(authenticator: any BiometricAuthenticating) { self.authenticator = authenticator }

    private static func key(_ service: String, _ account: String) -> String { "\(service.utf8.count):\(service)\(account)" }

    /// A grant opens anything: the stand-in authenticator said yes.
    private struct Grant: EngineGrant {
        func satisfies(_ access: AccessControl) -> Bool { true }
    }

    // MARK: Device

    func status() async -> Status {
        let (passcode, fingers, count) = state.withLock { ($0.passcode != nil, $0.fingers, $0.items.count) }
        return Status(home: configuration.home.path,
                      reader: Status.Reader(available: true, selection: configuration.reader.description),
                      tpm: Status.TPM(available: true, tcti: configuration.tpm.description),
                      vault: Status.Vault(available: true), passcodeSet: passcode, fingers: fingers,
                      biometryLockout: false, failedAttempts: 0, items: count)
    }

    func passcodeIsSet() async throws(DeviceError) -> Bool { state.withLock { $0.passcode != nil } }

    func setPasscode(_ passcode: SecureBytes) async throws(DeviceError) {
        guard passcode.count > 0 else { throw .invalidPasscode("the passcode is empty") }
        try state.withLock { (state) throws(DeviceError) in
            guard state.passcode == nil else { throw .passcodeAlreadySet }
            state.passcode = passcode
        }
    }

    func changePasscode(from old: SecureBytes, to new: SecureBytes) async throws(DeviceError) {
        try state.withLock { (state) throws(DeviceError) in
            try Self.check(old, against: state.passcode)
            state.passcode = new
        }
    }

    func removePasscode(_ passcode: SecureBytes) async throws(DeviceError) -> Int {
        try state.withLock { (state) throws(DeviceError) -> Int in
            try Self.check(passcode, against: state.passcode)
            state.passcode = nil
            state.fingers = []
            let doomed = state.items.filter { $0.value.attributes.accessibility == .whenPasscodeSetThisDeviceOnly }
            for key in doomed.keys { state.items[key] = nil }
            return doomed.count
        }
    }

    func enrolledFingers() async throws(DeviceError) -> [Finger] { state.withLock { $0.fingers } }

    func enroll(_ finger: Finger, passcode: SecureBytes, timeout: Duration,
                events: @escaping @Sendable (ScanEvent) -> Void) async throws(DeviceError) {
        try state.withLock { (state) throws(DeviceError) in
            try Self.check(passcode, against: state.passcode)
            if !state.fingers.contains(finger) { state.fingers = (state.fingers + [finger]).sorted() }
        }
    }

    func unenroll(_ finger: Finger?, passcode: SecureBytes) async throws(DeviceError) {
        try state.withLock { (state) throws(DeviceError) in
            try Self.check(passcode, against: state.passcode)
            guard !state.fingers.isEmpty else { throw .authentication(.biometryNotEnrolled) }
            if let finger {
                guard state.fingers.contains(finger) else { throw .fingerNotEnrolled(finger) }
                state.fingers.removeAll { $0 == finger }
            } else {
                state.fingers = []
            }
        }
    }

    func close() async {}

    private static func check(_ passcode: SecureBytes, against set: SecureBytes?) throws(DeviceError) {
        guard let set else { throw .authentication(.passcodeNotSet) }
        guard set == passcode else { throw .authentication(.authenticationFailed) }
    }

    // MARK: Authentication

    func availability(_ policy: AuthenticationPolicy) async -> Availability { await authenticator.availability() }

    func domainState() async throws(AuthenticationError) -> Data? {
        state.withLock { state in state.passcode == nil ? nil : Data(state.fingers.map(\.rawValue).joined(separator: ",").utf8) }
    }

    func authenticate(_ access: AccessControl, reason: String,
                      settings: ContextSettings) async throws(AuthenticationError) -> any EngineGrant {
        try await authenticator.authenticate(reason: reason)
        return Grant()
    }

    func grant(for access: AccessControl, reason: String,
               from authenticator: any BiometricAuthenticating) async throws(AuthenticationError) -> any EngineGrant {
        try await authenticator.authenticate(reason: reason)
        return Grant()
    }

    // MARK: Items

    func add(_ secret: SecureBytes, attributes: ItemAttributes) async throws(KeychainError) {
        try Self.validate(attributes, secret)
        try state.withLock { (state) throws(KeychainError) in
            if (!attributes.access.flags.isEmpty || attributes.accessibility == .whenPasscodeSetThisDeviceOnly)
                && state.passcode == nil {
                throw .authentication(.passcodeNotSet)
            }
            let key = Self.key(attributes.service, attributes.account)
            guard state.items[key] == nil else { throw .duplicateItem }
            state.items[key] = Item(attributes: attributes, secret: secret)
        }
    }

    func openAccess(service: String, account: String) async throws(KeychainError) -> AccessControl {
        try item(service, account).attributes.access
    }

    func secret(service: String, account: String, grant: (any EngineGrant)?) async throws(KeychainError) -> SecureBytes {
        let item = try item(service, account)
        guard item.attributes.access.flags.isEmpty || grant != nil else { throw .interactionNotAllowed }
        return item.secret
    }

    func update(service: String, account: String, secret: SecureBytes?, label: String??, comment: String??,
                generic: Data??, grant: (any EngineGrant)?) async throws(KeychainError) {
        var item = try item(service, account)
        if let secret {
            guard item.attributes.access.flags.isEmpty || grant != nil else { throw .interactionNotAllowed }
            item.secret = secret
        }
        if let label { item.attributes.label = label }
        if let comment { item.attributes.comment = comment }
        if let generic { item.attributes.generic = generic }
        item.attributes.modified = Date()
        try Self.validate(item.attributes, item.secret)
        let updated = item
        state.withLock { $0.items[Self.key(service, account)] = updated }
    }

    func delete(service: String, account: String) async throws(KeychainError) {
        try state.withLock { (state) throws(KeychainError) in
            guard state.items.removeValue(forKey: Self.key(service, account)) != nil else { throw .itemNotFound }
        }
    }

    func items(service: String?) async throws(KeychainError) -> [ListedItem] {
        state.withLock { state in
            state.items.values.map(\.attributes).filter { service == nil || $0.service == service }
                .sorted { ($0.created, $0.service, $0.account) < ($1.created, $1.service, $1.account) }
                .map { ListedItem(attributes: $0, state: .ok) }
        }
    }

    func attributes(service: String, account: String) async throws(KeychainError) -> ItemAttributes {
        try item(service, account).attributes
    }

    private func item(_ service: String, _ account: String) throws(KeychainError) -> Item {
        guard let item = state.withLock({ $0.items[Self.key(service, account)] }) else { throw .itemNotFound }
        return item
    }

    private static func validate(_ attributes: ItemAttributes, _ secret: SecureBytes) throws(KeychainError) {
        guard !attributes.service.isEmpty else { throw .invalidItem("the service is empty") }
        guard !attributes.account.isEmpty else { throw .invalidItem("the account is empty") }
        for (name, value) in [("service", attributes.service), ("account", attributes.account),
                              ("label", attributes.label ?? ""), ("comment", attributes.comment ?? "")]
        where value.utf8.count > Keychain.maximumFieldSize {
            throw .invalidItem("the \(name) is longer than \(Keychain.maximumFieldSize) bytes")
        }
        guard (1...Keychain.maximumSecretSize).contains(secret.count) else {
            throw .invalidItem("a secret is 1 byte to 1 MiB, not \(secret.count) bytes")
        }
    }
}
