import Foundation
import TouchstoneDBus
import TouchstoneSecure

/// The Secret Service's sessions: how secrets cross the bus between this
/// provider and one client connection. Each is opened by a client (its
/// unique bus name), exported at `/org/freedesktop/secrets/session/N` with
/// its Close method, usable by that client only, and closed by Close, by the
/// client leaving the bus, or by the provider's end.
///
/// - `plain`: secrets travel as they are (the client asked for it).
/// - `dh-ietf1024-sha256-aes128-cbc-pkcs7`: each secret AES-encrypted under
///   the key of a DH exchange made at OpenSession (`TransferKey`).
package final class Sessions: Sendable {
    package static let pathPrefix = "/org/freedesktop/secrets/session/"
    package static let plain = "plain"

    /// What the spec's clients get back for a session problem.
    package static let noSession = "org.freedesktop.Secret.Error.NoSession"
    package static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
    package static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"

    static let introspection = """
        <node>
          <interface name="org.freedesktop.Secret.Session">
            <method name="Close"/>
          </interface>
        </node>
        """

    private struct Session: Sendable {
        let owner: String
        /// nil: plain.
        let key: TransferKey?
        let registration: [DBusRegistration]
    }

    private let bus: DBusBus
    private let state = Locked<(next: UInt64, open: [String: Session])>((1, [:]))

    /// Sessions on `bus`; a client that leaves the bus has its sessions closed.
    package init(bus: DBusBus) async throws {
        self.bus = bus
        try await bus.subscribe(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                path: "/org/freedesktop/DBus") { [weak self] arguments in
            // (name, old owner, new owner): a unique name whose new owner is
            // empty has left the bus.
            guard arguments.count == 3, let name = arguments[0].string, name.hasPrefix(":"),
                  arguments[2].string?.isEmpty == true, let self else { return }
            Task { await self.closeAll(of: name) }
        }
    }

    /// OpenSession(algorithm, input): the output and the session's path, or
    /// the D-Bus error to answer with.
    package func open(algorithm: String, input: DBusValue, for client: String) async -> Result<(DBusValue, String), DBusError> {
        let key: TransferKey?
        let output: DBusValue
        switch algorithm {
        case Self.plain:
            key = nil
            output = .string("")
        case TransferKey.algorithm:
            guard case .variant(.bytes(let peer)) = input else {
                return .failure(DBusError(name: Self.invalidArgs, "the input of \(algorithm) is the client's public key, an ay"))
            }
            do {
                key = try TransferKey(peerPublicKey: peer)
            } catch {
                return .failure(DBusError(name: Self.invalidArgs, error.description))
            }
            output = .bytes(key!.publicKey)
        default:
            return .failure(DBusError(name: Self.notSupported, "the algorithm \(algorithm) is not supported (plain and \(TransferKey.algorithm) are)"))
        }
        let path = Self.pathPrefix + String(state.withLock { state in
            defer { state.next += 1 }
            return state.next
        })
        let object = SessionObject(sessions: self, path: path)
        do {
            let registration = try await bus.export(object, at: path, introspection: Self.introspection)
            state.withLock { $0.open[path] = Session(owner: client, key: key, registration: registration) }
        } catch {
            return .failure(DBusError(name: "org.freedesktop.DBus.Error.Failed", "cannot export \(path): \(error)"))
        }
        return .success((output, path))
    }

    /// Whether `path` is an open session of `client`'s.
    package func isOpen(_ path: String, for client: String) -> Bool {
        state.withLock { $0.open[path]?.owner == client }
    }

    /// Closes `path` when it is `client`'s.
    @discardableResult
    package func close(_ path: String, for client: String) async -> Bool {
        guard let session = state.withLock({ state -> Session? in
            guard state.open[path]?.owner == client else { return nil }
            return state.open.removeValue(forKey: path)
        }) else { return false }
        await bus.unexport(session.registration)
        return true
    }

    /// Closes every session of `client`'s.
    package func closeAll(of client: String) async {
        let paths = state.withLock { $0.open.filter { $0.value.owner == client }.map(\.key) }
        for path in paths { await close(path, for: client) }
    }

    /// The number of open sessions (for tests and status).
    package var count: Int { state.withLock { $0.open.count } }

    /// A secret as the Secret struct `(oayays)` for `path`: (session,
    /// parameters, value, content type).
    package func encode(_ secret: SecureBytes, contentType: String, session path: String,
                        for client: String) -> Result<DBusValue, DBusError> {
        guard let session = state.withLock({ $0.open[path] }), session.owner == client else {
            return .failure(DBusError(name: Self.noSession, "no open session \(path) of this connection's"))
        }
        guard let key = session.key else {
            return .success(.tuple([.objectPath(path), .bytes([]), .bytes(secret.withUnsafeBytes { Array($0) }), .string(contentType)]))
        }
        do {
            let (iv, ciphertext) = try key.encrypt(secret)
            return .success(.tuple([.objectPath(path), .bytes(iv), .bytes(ciphertext), .string(contentType)]))
        } catch {
            return .failure(DBusError(name: "org.freedesktop.DBus.Error.Failed", error.description))
        }
    }

    /// The secret and content type of a Secret struct `(oayays)` a client
    /// sent; its session must be that client's.
    package func decode(_ value: DBusValue, for client: String) -> Result<(SecureBytes, String), DBusError> {
        guard let parts = value.tupleItems, parts.count == 4, let path = parts[0].objectPath,
              let parameters = parts[1].bytes, let bytes = parts[2].bytes, let contentType = parts[3].string else {
            return .failure(DBusError(name: Self.invalidArgs, "a secret is (oayays): session, parameters, value, content type"))
        }
        guard let session = state.withLock({ $0.open[path] }), session.owner == client else {
            return .failure(DBusError(name: Self.noSession, "no open session \(path) of this connection's"))
        }
        guard let key = session.key else {
            return .success((SecureBytes(copying: bytes), contentType))
        }
        do {
            return .success((try key.decrypt(iv: parameters, ciphertext: bytes), contentType))
        } catch {
            return .failure(DBusError(name: Self.invalidArgs, "the secret does not decrypt in \(path): \(error)"))
        }
    }
}

/// A session's object on the bus: its Close method.
private final class SessionObject: DBusObject {
    weak let sessions: Sessions?
    let path: String

    init(sessions: Sessions, path: String) {
        self.sessions = sessions
        self.path = path
    }

    func handle(_ call: DBusCall) {
        guard call.method == "Close", let sessions else {
            return call.fail("org.freedesktop.DBus.Error.UnknownMethod", call.method)
        }
        let (path, sender) = (path, call.sender)
        Task {
            if await sessions.close(path, for: sender) {
                call.reply([])
            } else {
                call.fail(Sessions.noSession, "\(path) is not a session of this connection's")
            }
        }
    }

    func property(_ name: String, interface: String, path: String) -> DBusValue? { nil }
}
