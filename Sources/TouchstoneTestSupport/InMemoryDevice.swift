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
        /// By id; a name may repeat (Secret Service adds), a read by name takes the newest.
        var items: [Int64: Item] = [:]
        var nextID: Int64 = 1
        var passcode: SecureBytes?
        var fingers: [Finger] = []
        var touches = MatchingTouches.one
    }

    private let state = Mutex(State())

    init(authenticator: any BiometricAuthenticating) { self.authenticator = authenticator }

    /// The newest item of a name.
    private static func id(_ items: [Int64: Item], _ service: String, _ account: String) -> Int64? {
        items.filter { $0.value.attributes.service == service && $0.value.attributes.account == account }.keys.max()
    }

    /// A grant opens anything: the stand-in authenticator said yes.
    private struct Grant: EngineGrant {
        func satisfies(_ access: AccessControl) -> Bool { true }
    }

    // MARK: Device

    func status() async -> Status {
        let (passcode, fingers, count, touches) = state.withLock { ($0.passcode != nil, $0.fingers, $0.items.count, $0.touches) }
        var status = Status(home: configuration.home.path,
                            reader: Status.Reader(available: true, selection: configuration.reader.description),
                            tpm: Status.TPM(available: true, tcti: configuration.tpm.description),
                            vault: Status.Vault(available: true), passcodeSet: passcode, fingers: fingers,
                            biometryLockout: false, failedAttempts: 0, items: count)
        status.matchingTouches = touches
        return status
    }

    /// Kept and shown; the in-memory device asks for no touch at all.
    func setMatchingTouches(_ touches: MatchingTouches, passcode: SecureBytes) async throws(DeviceError) {
        try state.withLock { (state) throws(DeviceError) in
            try Self.check(passcode, against: state.passcode)
            state.touches = touches
        }
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

    func enroll(_ finger: Finger, passcode: SecureBytes) async throws(DeviceError) {
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

    func authenticate(reason: String) async throws(AuthenticationError) -> any EngineGrant {
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
            guard Self.id(state.items, attributes.service, attributes.account) == nil else { throw .duplicateItem }
            _ = try Self.insert(&state, attributes, secret)
        }
    }

    private static func insert(_ state: inout State, _ attributes: ItemAttributes,
                               _ secret: SecureBytes) throws(KeychainError) -> ItemReference {
        if (!attributes.access.flags.isEmpty || attributes.accessibility == .whenPasscodeSetThisDeviceOnly)
            && state.passcode == nil {
            throw .authentication(.passcodeNotSet)
        }
        let id = state.nextID
        state.nextID += 1
        state.items[id] = Item(attributes: attributes, secret: secret)
        return ItemReference(id: id)
    }

    func openAccess(service: String, account: String) async throws(KeychainError) -> AccessControl {
        try item(named: service, account).attributes.access
    }

    func secret(service: String, account: String, grant: (any EngineGrant)?) async throws(KeychainError) -> SecureBytes {
        try await secret(ItemReference(id: try id(service, account)), grant: grant).0
    }

    func update(service: String, account: String, secret: SecureBytes?, label: String??, comment: String??,
                generic: Data??, grant: (any EngineGrant)?) async throws(KeychainError) {
        let id = try id(service, account)
        try change(ItemReference(id: id), secret: secret, grant: grant) { item in
            if let label { item.attributes.label = label }
            if let comment { item.attributes.comment = comment }
            if let generic { item.attributes.generic = generic }
        }
    }

    func delete(service: String, account: String) async throws(KeychainError) {
        try await delete(ItemReference(id: try id(service, account)))
    }

    func items(service: String?) async throws(KeychainError) -> [ListedItem] {
        state.withLock { state in
            state.items.sorted { $0.key < $1.key }.map(\.value.attributes).filter { service == nil || $0.service == service }
                .map { ListedItem(attributes: $0, state: .ok) }
        }
    }

    func attributes(service: String, account: String) async throws(KeychainError) -> ItemAttributes {
        try item(named: service, account).attributes
    }

    // MARK: By reference

    func search(_ query: [String: String]) async throws(KeychainError) -> [ReferencedItem] {
        state.withLock { state in
            state.items.sorted { $0.key < $1.key }.filter { _, item in
                let set = item.attributes.effectiveSearchAttributes
                return query.allSatisfy { set[$0.key] == $0.value }
            }.map { ReferencedItem(reference: ItemReference(id: $0.key), item: ListedItem(attributes: $0.value.attributes, state: .ok)) }
        }
    }

    func add(_ secret: SecureBytes, attributes: ItemAttributes,
             replace: Bool) async throws(KeychainError) -> (ItemReference, replaced: [ItemReference]) {
        try Self.validate(attributes, secret)
        return try state.withLock { (state) throws(KeychainError) in
            var replaced: [ItemReference] = []
            if replace {
                let set = attributes.effectiveSearchAttributes
                let named = set["service"] == attributes.service && set["account"] == attributes.account
                for (id, item) in state.items where item.attributes.effectiveSearchAttributes == set
                    || (named && item.attributes.service == attributes.service && item.attributes.account == attributes.account) {
                    state.items[id] = nil
                    replaced.append(ItemReference(id: id))
                }
            }
            return (try Self.insert(&state, attributes, secret), replaced.sorted { $0.id < $1.id })
        }
    }

    func item(_ reference: ItemReference) async throws(KeychainError) -> ReferencedItem {
        ReferencedItem(reference: reference, item: ListedItem(attributes: try stored(reference).attributes, state: .ok))
    }

    func openAccess(_ reference: ItemReference) async throws(KeychainError) -> AccessControl {
        try stored(reference).attributes.access
    }

    func secret(_ reference: ItemReference, grant: (any EngineGrant)?) async throws(KeychainError) -> (SecureBytes, ItemAttributes) {
        let item = try stored(reference)
        guard item.attributes.access.flags.isEmpty || grant != nil else { throw .interactionNotAllowed }
        return (item.secret, item.attributes)
    }

    func update(_ reference: ItemReference, secret: SecureBytes?, label: String??, searchAttributes: [String: String]?,
                contentType: String??, grant: (any EngineGrant)?) async throws(KeychainError) {
        let renames = searchAttributes.map { new in (try? stored(reference))?.attributes.isRenamed(by: new) ?? false } ?? false
        try change(reference, secret: secret, grant: grant, needsGrant: renames) { item in
            if let label { item.attributes.label = label }
            if let contentType { item.attributes.contentType = contentType }
            if let searchAttributes {
                item.attributes.searchAttributes = searchAttributes
                if let service = searchAttributes["service"] { item.attributes.service = service }
                if let account = searchAttributes["account"] { item.attributes.account = account }
            }
        }
    }

    func delete(_ reference: ItemReference) async throws(KeychainError) {
        try state.withLock { (state) throws(KeychainError) in
            guard state.items.removeValue(forKey: reference.id) != nil else { throw .itemNotFound }
        }
    }

    /// Changes item `reference`; a new secret (or `needsGrant`) needs a
    /// grant unless the item's access is `none`.
    private func change(_ reference: ItemReference, secret: SecureBytes?, grant: (any EngineGrant)?, needsGrant: Bool = false,
                        _ body: (inout Item) -> Void) throws(KeychainError) {
        var item = try stored(reference)
        if secret != nil || needsGrant {
            guard item.attributes.access.flags.isEmpty || grant != nil else { throw .interactionNotAllowed }
        }
        if let secret { item.secret = secret }
        body(&item)
        item.attributes.modified = Date()
        try Self.validate(item.attributes, item.secret)
        let updated = item
        try state.withLock { (state) throws(KeychainError) in
            guard state.items[reference.id] != nil else { throw .itemNotFound }
            state.items[reference.id] = updated
        }
    }

    private func stored(_ reference: ItemReference) throws(KeychainError) -> Item {
        guard let item = state.withLock({ $0.items[reference.id] }) else { throw .itemNotFound }
        return item
    }

    private func id(_ service: String, _ account: String) throws(KeychainError) -> Int64 {
        guard let id = state.withLock({ Self.id($0.items, service, account) }) else { throw .itemNotFound }
        return id
    }

    private func item(named service: String, _ account: String) throws(KeychainError) -> Item {
        try stored(ItemReference(id: try id(service, account)))
    }

    private static func validate(_ attributes: ItemAttributes, _ secret: SecureBytes) throws(KeychainError) {
        guard !attributes.service.isEmpty else { throw .invalidItem("the service is empty") }
        guard !attributes.account.isEmpty else { throw .invalidItem("the account is empty") }
        for (name, value) in [("service", attributes.service), ("account", attributes.account),
                              ("label", attributes.label ?? ""), ("comment", attributes.comment ?? "")]
        where value.utf8.count > Keychain.maximumFieldSize {
            throw .invalidItem("the \(name) is longer than \(Keychain.maximumFieldSize) bytes")
        }
        let smallest = attributes.searchAttributes == nil ? 1 : 0
        guard (smallest...Keychain.maximumSecretSize).contains(secret.count) else {
            throw .invalidItem("a secret is \(smallest) byte\(smallest == 1 ? "" : "s") to 1 MiB, not \(secret.count) bytes")
        }
    }
}
