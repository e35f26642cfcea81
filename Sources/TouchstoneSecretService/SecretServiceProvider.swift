import Foundation
import Touchstone
import TouchstoneDBus
import TouchstoneSecure

/// org.freedesktop.secrets over a Touchstone keychain (docs/secret-service.md).
///
/// - The `default` collection is the vault: its items are the vault's
///   items (`Keychain`'s references and attribute sets), wherever they were
///   added; the `session` collection is kept in memory until the provider
///   ends, as gnome-keyring's is.
/// - An item whose access needs authentication is Locked (to every client
///   that has not unlocked it); searches find it by its attributes alone.
///   Unlock returns a Prompt; Prompt() waits for the touch (or the passcode,
///   through pinentry) while every method call is answered at once, and
///   emits Completed. The prompt names every item it unlocks and asks for
///   one authentication for the set; the client that completed it reads
///   those items, and no other, for `unlockDuration` after that
///   authentication (its grant's reuse window), as long as it stays on
///   the bus.
/// - Items clients create get `access`.
///
/// Every call is answered from a task of its own: none waits for a finger,
/// and one client's slow call holds no other's.
package final class SecretServiceProvider: Sendable {
    package static let busName = "org.freedesktop.secrets"
    /// How long a completed prompt's items stay unlocked for its client:
    /// its context's reuse window.
    package static let unlockDuration: TimeInterval = 60
    /// The most items one Unlock may name.
    static let maximumObjects = 1024
    /// The most live unlocks a client keeps (one a completed prompt); a
    /// newer one drops the oldest (a daemon connection keeps 16 grants).
    static let maximumUnlocks = 16

    static let serviceInterface = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"
    static let promptInterface = "org.freedesktop.Secret.Prompt"
    static let propertiesInterface = "org.freedesktop.DBus.Properties"
    static let labelProperty = "org.freedesktop.Secret.Item.Label"
    static let attributesProperty = "org.freedesktop.Secret.Item.Attributes"
    static let typeProperty = "org.freedesktop.Secret.Item.Type"

    let bus: DBusBus
    let sessions: Sessions
    let device: TouchstoneDevice
    var keychain: Keychain { device.keychain }
    /// The access of items that clients create.
    let access: AccessControl
    let prompter: Prompter
    let notifier: DesktopNotifications
    let started = Date()

    /// One completed prompt's unlock: the context it authenticated (its
    /// grant kept for reuse, no further interaction allowed), the items it
    /// named and opened (that context opens no other item for the client,
    /// whatever its grant could), until when (its grant's reuse window).
    struct Unlock: Sendable {
        let context: AuthenticationContext
        var items: Set<ItemReference>
        let until: Date
    }

    struct MemoryItem: Sendable {
        var attributes: [String: String]
        var label: String
        var secret: SecureBytes
        var contentType: String
        let created: Date
        var modified: Date
    }

    struct State: Sendable {
        /// Each client's unlocks, one a completed prompt (never merged: each
        /// ends with its own grant).
        var unlocks: [String: [Unlock]] = [:]
        var memory: [Int64: MemoryItem] = [:]
        var nextMemory: Int64 = 1
        var prompts: [String: PendingPrompt] = [:]
        var nextPrompt: UInt64 = 1
        /// The service object's registration.
        var registrations: [DBusRegistration] = []
        /// The collections, their labels and aliases, and which are locked.
        var book: CollectionBook
        /// Each collection's subtree, each alias's object.
        var collectionRegistrations: [String: [DBusRegistration]] = [:]
        var aliasRegistrations: [String: [DBusRegistration]] = [:]
    }

    let state: Locked<State>
    /// Where the collection book is kept: `secret-service` in the state folder.
    let bookFolder: String

    package init(bus: DBusBus, device: TouchstoneDevice, access: AccessControl, prompter: Prompter) async throws {
        self.bus = bus
        self.device = device
        self.access = access
        self.prompter = prompter
        bookFolder = device.configuration.home.path + "/secret-service"
        let (book, problem) = CollectionBook.load(from: bookFolder, now: Date())
        if let problem { prompter.log(problem) }
        state = Locked(State(book: book))
        notifier = DesktopNotifications(bus: bus, log: prompter.log)
        sessions = try await Sessions(bus: bus)
        try await bus.subscribe(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                path: "/org/freedesktop/DBus") { [weak self] arguments in
            guard arguments.count == 3, let name = arguments[0].string, name.hasPrefix(":"),
                  arguments[2].string?.isEmpty == true, let self else { return }
            self.clientLeft(name)
        }
    }

    /// What `start` found.
    package enum Start: Sendable, Equatable {
        case serving
        /// Another program has the name (its unique name, pid and command).
        case taken(owner: String)
    }

    /// Exports the objects and asks for the name (taking it over with
    /// `replace`). `lost`: the name was taken away later.
    package func start(replace: Bool, lost: @escaping @Sendable () -> Void) async throws -> Start {
        let object = ProviderObject(self)
        let ids = try await bus.export(object, at: SecretPaths.service, introspection: Introspection.service)
        state.withLock { $0.registrations = ids }
        await adoptCollectionsOfItems()
        let (collections, aliases) = state.withLock { ($0.book.ids, Array($0.book.aliases.keys)) }
        for id in collections { try await exportCollection(id) }
        for alias in aliases { try await exportAlias(alias) }
        switch try await bus.requestName(Self.busName, replace: replace, lost: lost) {
        case .owned:
            return .serving
        case .taken:
            let owner = await bus.owner(of: Self.busName)
            let who = owner.map { o in
                [o.program?.description, "bus name \(o.uniqueName)"].compactMap { $0 }.joined(separator: ", ")
            } ?? "another program"
            return .taken(owner: who)
        }
    }

    /// Takes every object down and dismisses the prompts.
    package func stop() async {
        let (ids, prompts) = state.withLock { state in
            defer {
                state.registrations = []
                state.collectionRegistrations = [:]
                state.aliasRegistrations = [:]
                state.unlocks = [:]
            }
            let all = state.registrations + state.collectionRegistrations.values.flatMap { $0 } + state.aliasRegistrations.values.flatMap { $0 }
            return (all, Array(state.prompts.values))
        }
        for prompt in prompts { prompt.task?.cancel() }
        await bus.unexport(ids)
    }

    /// A client left the bus: its unlocks go, its prompts are dismissed.
    func clientLeft(_ name: String) {
        let prompts = state.withLock { state -> [PendingPrompt] in
            state.unlocks[name] = nil
            return state.prompts.values.filter { $0.owner == name }
        }
        for prompt in prompts { prompt.task?.cancel() }
    }

    // MARK: - Locking

    /// The context of a live unlock of `client`'s that named `reference`;
    /// nil when none did (another unlock's context is never used for it).
    /// Expired unlocks go.
    func unlock(of client: String, for reference: ItemReference) -> AuthenticationContext? {
        let now = Self.clock()
        return state.withLock { state in
            guard var unlocks = state.unlocks[client] else { return nil }
            unlocks.removeAll { $0.until <= now }
            state.unlocks[client] = unlocks.isEmpty ? nil : unlocks
            return unlocks.last { $0.items.contains(reference) }?.context
        }
    }

    /// `client`'s unlocks no longer cover `reference` (Lock, or its
    /// context no longer opens it).
    func forget(_ reference: ItemReference, for client: String) {
        state.withLock { state in
            guard var unlocks = state.unlocks[client] else { return }
            for index in unlocks.indices { unlocks[index].items.remove(reference) }
            unlocks.removeAll { $0.items.isEmpty }
            state.unlocks[client] = unlocks.isEmpty ? nil : unlocks
        }
    }

    /// The clock unlocks expire by: the wall clock; in debug builds the
    /// test clock of the file TOUCHSTONE_TEST_CLOCK_FILE names (the
    /// daemon's, `TestClockFile`), so that a test passes the reuse window
    /// without sleeping through it.
    static let clock: @Sendable () -> Date = {
        #if TOUCHSTONE_TEST_SUPPORT
        if let file = ProcessInfo.processInfo.environment["TOUCHSTONE_TEST_CLOCK_FILE"] {
            return { Date(timeIntervalSince1970: TestClockFile.now(file)) }
        }
        #endif
        return { Date() }
    }()

    /// Whether the item is locked for `client`: it needs authentication
    /// (or no longer opens, or does not decrypt) and `client` has not
    /// unlocked it.
    func isLocked(_ item: ReferencedItem, for client: String) -> Bool {
        guard let attributes = item.item.attributes, item.item.state == .ok else { return true }
        if state.withLock({ $0.book.locked.contains(Self.collection(of: item)) }) { return true }
        if attributes.access.flags.isEmpty { return false }
        return unlock(of: client, for: item.reference) == nil
    }

    // MARK: - Errors

    /// A keychain failure as a D-Bus error (its text says what and what to do).
    static func dbusError(_ error: KeychainError) -> DBusError {
        switch error {
        case .itemNotFound: DBusError(name: SecretError.noSuchObject, "no such item")
        case .invalidItem(let why): DBusError(name: SecretError.invalidArgs, why)
        case .interactionNotAllowed: DBusError(name: SecretError.isLocked, "the item is locked: Unlock it (its prompt asks for the touch)")
        default: DBusError(name: SecretError.failed, error.description)
        }
    }

    static func noSuchObject(_ path: String) -> DBusError {
        DBusError(name: SecretError.noSuchObject, "no such object: \(path)")
    }
}

/// The provider's one object behind every path: calls (and property
/// reads, which may need the vault) are answered from tasks.
final class ProviderObject: DBusObject {
    weak let provider: SecretServiceProvider?

    init(_ provider: SecretServiceProvider) { self.provider = provider }

    var answersProperties: Bool { true }

    func handle(_ call: DBusCall) {
        guard let provider else { return call.fail(SecretError.failed, "the provider is stopping") }
        Task(executorPreference: provider.device.engine.taskExecutor) { call.answer(await provider.dispatch(call)) }
    }

    func property(_ name: String, interface: String, path: String) -> DBusValue? { nil }
}
