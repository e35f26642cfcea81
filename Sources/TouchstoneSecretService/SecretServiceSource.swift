import Foundation
import TouchstoneDBus
import TouchstoneSecure

/// Another Secret Service provider on the session bus (gnome-keyring,
/// KeePassXC, ...), read through its own API as any client reads it: a
/// session (`dh-ietf1024-sha256-aes128-cbc-pkcs7` when it offers it, else
/// `plain`), its collections and their items, its prompts for what is
/// locked. Nothing in it is changed, except that a collection this source
/// unlocked can be locked again (`lock`).
package final class SecretServiceSource: Sendable {
    static let name = "org.freedesktop.secrets"
    static let servicePath = "/org/freedesktop/secrets"
    static let service = "org.freedesktop.Secret.Service"
    static let collectionInterface = "org.freedesktop.Secret.Collection"
    static let itemInterface = "org.freedesktop.Secret.Item"

    let bus: DBusBus
    /// The provider: its unique name and its program.
    package let owner: String
    package let ownerProgram: String?
    let session: String
    let key: TransferKey?

    /// What went wrong with the source, said so a person can act on it.
    package struct Failure: Error, Sendable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// A collection of the source.
    package struct Collection: Sendable {
        package let path: String
        package let label: String
        package let locked: Bool
    }

    /// An item's metadata (no secret).
    package struct Item: Sendable {
        package let path: String
        package let label: String
        package let attributes: [String: String]
        package let created: Date?
        package let modified: Date?
        /// Locked for this client by itself, its collection open (a
        /// Touchstone item that needs a touch; a KeePassXC entry whose
        /// access it confirms).
        package let locked: Bool
    }

    /// Opens a session with the provider that owns org.freedesktop.secrets on `bus`.
    package init(bus: DBusBus) async throws(Failure) {
        self.bus = bus
        guard let found = await bus.owner(of: Self.name) else {
            throw Failure("no Secret Service is running on the session bus (nothing owns \(Self.name)): start the keyring you move from (gnome-keyring, KeePassXC with its Secret Service integration on)")
        }
        owner = found.uniqueName
        ownerProgram = found.program?.description
        // The encrypted session when the source offers it.
        do {
            let pair = try TransferKey.KeyPair()
            let answer = try await Self.call(bus, Self.servicePath, Self.service, "OpenSession",
                                             [.string(TransferKey.algorithm), .variant(.bytes(pair.publicKey))])
            guard answer.count == 2, let theirs = answer[0].variantValue?.bytes, let path = answer[1].objectPath else {
                throw Failure("its OpenSession answered \(answer)")
            }
            key = try pair.agree(peerPublicKey: theirs)
            session = path
            return
        } catch let failure as Failure {
            throw failure
        } catch let failure as TransferKey.Failure {
            throw Failure("its encrypted session failed: \(failure)")
        } catch {
            // NotSupported: a plain session, as libsecret falls back.
        }
        do {
            let answer = try await Self.call(bus, Self.servicePath, Self.service, "OpenSession", [.string("plain"), .variant(.string(""))])
            guard answer.count == 2, let path = answer[1].objectPath else { throw Failure("its OpenSession answered \(answer)") }
            key = nil
            session = path
        } catch let failure as Failure {
            throw failure
        } catch {
            throw Failure("it opens no session: \(error)")
        }
    }

    /// Whether secrets travel encrypted.
    package var isEncrypted: Bool { key != nil }

    /// Its collections, as its Collections property lists them.
    package func collections() async throws(Failure) -> [Collection] {
        let paths = try await property(Self.servicePath, Self.service, "Collections").arrayItems?.compactMap(\.objectPath) ?? []
        var out: [Collection] = []
        for path in paths {
            let all = try await properties(path, Self.collectionInterface)
            out.append(Collection(path: path, label: all["Label"]?.string ?? "", locked: all["Locked"]?.bool ?? false))
        }
        return out
    }

    /// The collection `alias` names, or nil.
    package func alias(_ alias: String) async -> String? {
        guard let answer = try? await Self.call(bus, Self.servicePath, Self.service, "ReadAlias", [.string(alias)]),
              let path = answer.first?.objectPath, path != "/" else { return nil }
        return path
    }

    /// Unlocks `paths` (collections or items) through the source's own
    /// prompt (gnome-keyring asks for the keyring's password in its
    /// dialog, another Touchstone for a touch), waiting up to `timeout` for
    /// the person. The paths it unlocked: those it said were open, and
    /// those its prompt's result names (all that were asked, when a prompt
    /// that was not dismissed names none).
    package func unlock(_ paths: [String], timeout: Duration) async throws(Failure) -> Set<String> {
        let answer = try await call(Self.servicePath, Self.service, "Unlock", [.array(element: "o", paths.map { .objectPath($0) })])
        guard answer.count == 2, let prompt = answer[1].objectPath else { throw Failure("its Unlock answered \(answer)") }
        let open = Set(answer[0].arrayItems?.compactMap(\.objectPath) ?? [])
        if prompt == "/" { return open.intersection(paths) }
        let (completions, completed) = AsyncStream<(dismissed: Bool, unlocked: [String])>.makeStream()
        do {
            try await bus.subscribe(sender: owner, interface: "org.freedesktop.Secret.Prompt", member: "Completed", path: prompt) { arguments in
                let unlocked = arguments.count > 1 ? arguments[1].variantValue?.arrayItems?.compactMap(\.objectPath) ?? [] : []
                completed.yield((arguments.first?.bool ?? true, unlocked))
                completed.finish()
            }
        } catch {
            throw Failure("cannot follow its prompt: \(error)")
        }
        _ = try await call(prompt, "org.freedesktop.Secret.Prompt", "Prompt", [.string("")])
        let outcome = await withTaskGroup(of: (dismissed: Bool, unlocked: [String])?.self) { group in
            group.addTask { await completions.first { _ in true } }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
        guard let outcome else {
            _ = try? await Self.call(bus, prompt, "org.freedesktop.Secret.Prompt", "Dismiss", [])
            throw Failure("its prompt to unlock \(paths.count == 1 ? paths[0] : "\(paths.count) objects") was not answered within \(timeout)")
        }
        guard !outcome.dismissed else { return open.intersection(paths) }
        return outcome.unlocked.isEmpty ? Set(paths) : open.union(outcome.unlocked).intersection(paths)
    }

    /// Locks what this import unlocked again, as it was found.
    package func lock(_ paths: [String]) async {
        guard !paths.isEmpty else { return }
        _ = try? await call(Self.servicePath, Self.service, "Lock", [.array(element: "o", paths.map { .objectPath($0) })])
    }

    /// The item paths of a collection.
    package func items(of collection: String) async throws(Failure) -> [String] {
        try await property(collection, Self.collectionInterface, "Items").arrayItems?.compactMap(\.objectPath) ?? []
    }

    /// An item's label, attributes and times.
    package func item(_ path: String) async throws(Failure) -> Item {
        let all = try await properties(path, Self.itemInterface)
        func date(_ name: String) -> Date? {
            guard case .uint64(let seconds)? = all[name], seconds > 0 else { return nil }
            return Date(timeIntervalSince1970: TimeInterval(seconds))
        }
        return Item(path: path, label: all["Label"]?.string ?? "", attributes: all["Attributes"]?.stringDictionary ?? [:],
                    created: date("Created"), modified: date("Modified"), locked: all["Locked"]?.bool ?? false)
    }

    /// The secrets of `paths` (their content types), through the session:
    /// those it gives (a locked item it leaves out).
    package func secrets(_ paths: [String]) async throws(Failure) -> [String: (secret: SecureBytes, contentType: String)] {
        let answer = try await call(Self.servicePath, Self.service, "GetSecrets",
                                    [.array(element: "o", paths.map { .objectPath($0) }), .objectPath(session)])
        var out: [String: (SecureBytes, String)] = [:]
        for entry in answer.first?.entries ?? [] {
            guard let path = entry.key.objectPath, let parts = entry.value.tupleItems, parts.count == 4,
                  let parameters = parts[1].bytes, var value = parts[2].bytes else { continue }
            defer { secureWipe(&value) }
            let contentType = parts[3].string ?? ""
            if let key {
                do {
                    out[path] = (try key.decrypt(iv: parameters, ciphertext: value), contentType)
                } catch {
                    throw Failure("the secret of \(path) does not decrypt: \(error)")
                }
            } else {
                out[path] = (SecureBytes(copying: value), contentType)
            }
        }
        return out
    }

    /// Closes the session.
    package func close() async {
        _ = try? await Self.call(bus, session, "org.freedesktop.Secret.Session", "Close", [])
    }

    // MARK: - Calls

    /// Every property of `interface` at `path`, in one round trip (GetAll).
    private func properties(_ path: String, _ interface: String) async throws(Failure) -> [String: DBusValue] {
        let answer = try await call(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(interface)])
        guard let all = answer.first?.variantDictionary else { throw Failure("\(path) answered GetAll with \(answer)") }
        return all
    }

    private func property(_ path: String, _ interface: String, _ name: String) async throws(Failure) -> DBusValue {
        let answer = try await call(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])
        guard let value = answer.first?.variantValue else { throw Failure("\(path) has no \(name)") }
        return value
    }

    private func call(_ path: String, _ interface: String, _ method: String, _ arguments: [DBusValue]) async throws(Failure) -> [DBusValue] {
        do {
            return try await Self.call(bus, path, interface, method, arguments)
        } catch {
            throw Failure("\(interface).\(method) on \(path): \(error)")
        }
    }

    private static func call(_ bus: DBusBus, _ path: String, _ interface: String, _ method: String,
                             _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await bus.call(destination: name, path: path, interface: interface, method: method, arguments, timeoutMilliseconds: 60_000)
    }
}
