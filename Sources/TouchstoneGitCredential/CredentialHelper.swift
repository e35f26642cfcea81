import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// git's three operations against the vault (docs/git.md). Each opens the
/// device (embedded or through the daemon, as `touchstone` would with the
/// same options) only once the request is read and found well-formed.
struct CredentialHelper {
    let options: GlobalOptions
    /// The access control of the items `store` adds.
    let access: AccessControl
    let configuration: Configuration
    let interaction: TerminalInteraction

    /// How many times `store` tries again when another store of the same
    /// item comes between its delete and its add.
    static let storeAttempts = 3

    init(options: GlobalOptions, access: AccessControl) {
        self.options = options
        self.access = access
        interaction = TerminalInteraction(passcodeDescriptor: options.passcodeFD)
        let engine: EngineSelection = switch options.engine {
        case .automatic: .automatic
        case .embedded: .embedded
        case .daemon(let socket): .daemon(socket: socket)
        }
        configuration = Configuration(home: URL(fileURLWithPath: options.home), tpm: options.tpm, reader: options.reader,
                                      engine: engine)
    }

    /// Prints `username=` and `password=` of the item for the request,
    /// after the authentication the item asks for; prints nothing when
    /// there is no such item. Without a username: the service's item used
    /// or stored last (`chooseAccount`).
    func get(_ request: CredentialRequest) async throws {
        guard let item = CredentialItem(request) else { return }
        try await TouchstoneDevice.withDevice(configuration) { device in
            let keychain = device.keychain
            let account: String
            if let username = request.username {
                account = username
            } else {
                guard let chosen = Self.chooseAccount(try await keychain.items(service: item.service)) else { return }
                account = chosen
            }
            let context = device.makeContext()
            context.interaction = interaction
            context.touchTimeout = options.timeout
            guard let secret = try await Self.secret(keychain, item, account: account, context: context) else { return }
            try Task.checkCancellation()  // a signal just now: write nothing
            let reply = try Self.reply(account: account, password: secret, service: item.service)
            do {
                try reply.withUnsafeBytes { bytes in try Output.writeAll(1, bytes) }
            } catch {
                throw CLIFailure(.failure, "cannot write the credential to git (stdout): \(error)")
            }
        }
    }

    /// The item's secret, or nil when there is no such item.
    private static func secret(_ keychain: Keychain, _ item: CredentialItem, account: String,
                               context: AuthenticationContext) async throws(KeychainError) -> SecureBytes? {
        do throws(KeychainError) {
            return try await keychain.get(service: item.service, account: account, context: context,
                                          reason: item.reason(account: account))
        } catch .itemNotFound {
            return nil
        }
    }

    /// Saves the username and password as the item for the request, with
    /// `access`; does nothing when git gave no username or no password (as
    /// git's own credential-store). An item already there is replaced
    /// without an authentication (`replace`).
    func store(_ request: CredentialRequest) async throws {
        guard let item = CredentialItem(request), let account = request.username, let password = request.password else { return }
        try await TouchstoneDevice.withDevice(configuration) { device in
            if !access.flags.isEmpty, !(try await device.passcodeIsSet()) {
                // Checked before anything is removed: the add would refuse.
                throw KeychainError.authentication(.passcodeNotSet)
            }
            try await store(item, account: account, password: password, keychain: device.keychain)
        }
    }

    /// `replace`, again when another store added the item between its
    /// delete and its add.
    private func store(_ item: CredentialItem, account: String, password: SecureBytes,
                       keychain: Keychain) async throws(KeychainError) {
        var attempt = 1
        while true {
            do throws(KeychainError) {
                try await replace(item, account: account, password: password, keychain: keychain)
                return
            } catch .duplicateItem where attempt < Self.storeAttempts {
                attempt += 1
            }
        }
    }

    /// Removes the item for the request; without a username, every item
    /// of the service. A password git sends along is not compared (that
    /// would take the item's authentication). No item is no error.
    func erase(_ request: CredentialRequest) async throws {
        guard let item = CredentialItem(request) else { return }
        try await TouchstoneDevice.withDevice(configuration) { device in
            let keychain = device.keychain
            let accounts = if let username = request.username {
                [username]
            } else {
                try await keychain.items(service: item.service).compactMap(\.attributes?.account)
            }
            for account in accounts { try await Self.delete(keychain, item, account: account) }
        }
    }

    /// Deletes the item; no such item is no error. (A typed do-catch in
    /// withDevice's closure crashes Swift 6.3.1's SILGen: kept out here.)
    private static func delete(_ keychain: Keychain, _ item: CredentialItem, account: String) async throws(KeychainError) {
        do throws(KeychainError) {
            try await keychain.delete(service: item.service, account: account)
        } catch .itemNotFound {}
    }

    /// Adds the item, or replaces the one there: an item without access
    /// control (`none`) that stays so has its secret updated in place; any
    /// other is deleted and added again with `access`. Neither takes a
    /// touch: Keychain semantics let whoever may add and delete items do
    /// both (SecItemAdd, SecItemDelete), and git stores after every
    /// successful use, so a touch here would be a second touch per use.
    private func replace(_ item: CredentialItem, account: String, password: SecureBytes,
                         keychain: Keychain) async throws(KeychainError) {
        let existing: ItemAttributes?
        do throws(KeychainError) {
            existing = try await keychain.attributes(service: item.service, account: account)
        } catch .itemNotFound {
            existing = nil
        }
        if let existing {
            if existing.access.flags.isEmpty && access.flags.isEmpty {
                try await keychain.update(password, service: item.service, account: account, reason: item.reason(account: account))
                return
            }
            try await Self.delete(keychain, item, account: account)
        }
        try await keychain.add(password, service: item.service, account: account, label: item.label(account: account),
                               access: access)
    }

    /// The account `get` answers for when git gave no username: among the
    /// service's items that still open, else among all of them (so that
    /// the error says why), the one modified last (stored last: git stores
    /// after each successful use), the first account in order on a tie.
    static func chooseAccount(_ items: [ListedItem]) -> String? {
        let readable = items.compactMap { item in item.attributes.map { (item.state, $0) } }
        let open = readable.filter { $0.0 == .ok }
        let candidates = (open.isEmpty ? readable : open).map(\.1)
        return candidates.min { ($0.modified, $1.account) > ($1.modified, $0.account) }?.account
    }

    /// `username=ACCOUNT\npassword=SECRET\n` in wiped memory. Refused when
    /// the protocol cannot carry them: a newline, CR or NUL in either (an
    /// item added by hand with `echo`, say).
    static func reply(account: String, password: SecureBytes, service: String) throws(CLIFailure) -> SecureBytes {
        if account.unicodeScalars.contains(where: SafeText.isUnsafe) {
            throw CLIFailure(.failure, "the account of \(service) holds a control character, which git's protocol cannot carry")
        }
        let unsafe = password.withUnsafeBytes { $0.contains(0x0A) || $0.contains(0x0D) || $0.contains(0) }
        if unsafe {
            throw CLIFailure(.failure, "the password of \(service) / \(account) holds a newline, CR or NUL, which git's protocol cannot carry",
                             hint: "store it without the newline: printf '%s' \"$token\" | touchstone add '\(service)' '\(account)'")
        }
        let head = Array("username=\(account)\npassword=".utf8)
        let reply = SecureBytes(count: head.count + password.count + 1)
        reply.withUnsafeMutableBytes { out in
            out.copyBytes(from: head)
            password.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[head.count...]).copyMemory(from: $0) }
            out[out.count - 1] = 0x0A
        }
        return reply
    }
}
