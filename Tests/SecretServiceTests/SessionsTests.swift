import Foundation
import Testing
import TestRigs
import TouchstoneDBus
import TouchstoneSecretService
import TouchstoneSecure

/// A service for the tests, above the seam: OpenSession handed to
/// `Sessions`, and a secret kept by Store and given back by Fetch through
/// whichever session the caller names (the provider's items will do this).
private final class SessionService: DBusObject {
    static let path = "/org/freedesktop/secrets"
    static let introspection = """
        <node>
          <interface name="org.freedesktop.Secret.Service">
            <method name="OpenSession">
              <arg name="algorithm" type="s" direction="in"/>
              <arg name="input" type="v" direction="in"/>
              <arg name="output" type="v" direction="out"/>
              <arg name="result" type="o" direction="out"/>
            </method>
          </interface>
          <interface name="org.touchstone.Test">
            <method name="Store">
              <arg name="secret" type="(oayays)" direction="in"/>
            </method>
            <method name="Fetch">
              <arg name="session" type="o" direction="in"/>
              <arg name="secret" type="(oayays)" direction="out"/>
            </method>
          </interface>
        </node>
        """

    let sessions: Sessions
    let kept = Locked<(SecureBytes, String)?>(nil)

    init(_ sessions: Sessions) { self.sessions = sessions }

    func handle(_ call: DBusCall) {
        let arguments = call.arguments
        switch call.method {
        case "OpenSession":
            guard let algorithm = arguments.first?.string else { return call.fail(Sessions.invalidArgs, "s") }
            Task {
                switch await sessions.open(algorithm: algorithm, input: arguments[1], for: call.sender) {
                case .success(let (output, path)): call.reply([.variant(output), .objectPath(path)])
                case .failure(let error): call.fail(error.name ?? "org.freedesktop.DBus.Error.Failed", error.message)
                }
            }
        case "Store":
            switch sessions.decode(arguments[0], for: call.sender) {
            case .success(let secret):
                kept.withLock { $0 = secret }
                call.reply([])
            case .failure(let error): call.fail(error.name ?? "", error.message)
            }
        case "Fetch":
            guard let (secret, type) = kept.withLock({ $0 }), let path = arguments[0].objectPath else {
                return call.fail("org.freedesktop.Secret.Error.NoSuchObject", "nothing kept")
            }
            switch sessions.encode(secret, contentType: type, session: path, for: call.sender) {
            case .success(let value): call.reply([value])
            case .failure(let error): call.fail(error.name ?? "", error.message)
            }
        default:
            call.fail("org.freedesktop.DBus.Error.UnknownMethod", call.method)
        }
    }

    func property(_ name: String, interface: String, path: String) -> DBusValue? { nil }
}

/// The service served on a private bus.
private struct Provider: Sendable {
    let served: ServedObject<SessionService>
    var rig: DBusRig { served.rig }
    var bus: DBusBus { served.bus }
    var service: SessionService { served.object }

    init() async throws {
        served = try await ServedObject(at: SessionService.path, introspection: SessionService.introspection) { bus in
            SessionService(try await Sessions(bus: bus))
        }
    }

    func client() async throws -> DBusBus { try await served.client() }

    func call(_ client: DBusBus, _ interface: String, _ method: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await client.call(destination: bus.uniqueName, path: SessionService.path, interface: interface, method: method, arguments)
    }

    func open(_ client: DBusBus, _ algorithm: String, _ input: DBusValue) async throws -> (DBusValue, String) {
        let reply = try await call(client, "org.freedesktop.Secret.Service", "OpenSession", [.string(algorithm), .variant(input)])
        guard reply.count == 2, case .variant(let output) = reply[0], let path = reply[1].objectPath else {
            throw RigFailure("OpenSession answered \(reply)")
        }
        return (output, path)
    }

    /// The D-Bus error name a call ends with (nil: it succeeded).
    func failure(_ client: DBusBus, _ interface: String, _ method: String, _ arguments: [DBusValue], path: String? = nil) async -> String? {
        do {
            _ = try await client.call(destination: bus.uniqueName, path: path ?? SessionService.path, interface: interface,
                                      method: method, arguments)
            return nil
        } catch let error as DBusError {
            return error.name ?? "?"
        } catch {
            return "?"
        }
    }
}

@Suite("The Secret Service's sessions, over a private bus")
struct SessionsTests {
    @Test("plain: a secret crosses both ways as it is; the session's object has Close, and after it the session is gone")
    func plain() async throws {
        let provider = try await Provider()
        defer { provider.rig.close() }
        let client = try await provider.client()
        let (output, path) = try await provider.open(client, "plain", .string(""))
        #expect(output == .string(""))
        #expect(path.hasPrefix(Sessions.pathPrefix))
        let introspect = try provider.rig.gdbus(["introspect", "--dest", provider.bus.uniqueName, "--object-path", path])
        #expect(introspect.output.contains("org.freedesktop.Secret.Session") && introspect.output.contains("Close"), "\(introspect.output)")

        _ = try await provider.call(client, "org.touchstone.Test", "Store",
                                    [.tuple([.objectPath(path), .bytes([]), .bytes(Array("hunter2".utf8)), .string("text/plain")])])
        let fetched = try await provider.call(client, "org.touchstone.Test", "Fetch", [.objectPath(path)])
        #expect(fetched == [.tuple([.objectPath(path), .bytes([]), .bytes(Array("hunter2".utf8)), .string("text/plain")])])

        #expect(await provider.failure(client, "org.freedesktop.Secret.Session", "Close", [], path: path) == nil)
        #expect(await provider.failure(client, "org.touchstone.Test", "Fetch", [.objectPath(path)]) == Sessions.noSession)
        #expect(await provider.failure(client, "org.freedesktop.Secret.Session", "Close", [], path: path)
                == "org.freedesktop.DBus.Error.UnknownMethod", "the session object is still there")
    }

    @Test("dh-ietf1024-sha256-aes128-cbc-pkcs7 against a client written apart (Python's integers and hmac, the openssl command): a secret it encrypted is stored, and one given back it decrypts")
    func encrypted() async throws {
        let provider = try await Provider()
        defer { provider.rig.close() }
        let folder = try makeTemporaryDirectory("tss")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let peer = try IndependentPeer(folder: folder)
        let client = try await provider.client()
        let (output, path) = try await provider.open(client, TransferKey.algorithm, .bytes(try peer.publicKey()))
        let providerKey = try #require(output.bytes)
        #expect(providerKey.count == 128)
        let key = try peer.aesKey(for: providerKey)

        let secret = Array("correct horse battery staple".utf8)
        let iv = (0..<16).map { _ in UInt8.random(in: 0...255) }
        let sealed = try peer.encrypt(secret, key: key, iv: iv)
        _ = try await provider.call(client, "org.touchstone.Test", "Store",
                                    [.tuple([.objectPath(path), .bytes(iv), .bytes(sealed), .string("text/plain; charset=utf8")])])
        let fetched = try await provider.call(client, "org.touchstone.Test", "Fetch", [.objectPath(path)])
        let parts = try #require(fetched.first?.tupleItems)
        #expect(parts.count == 4 && parts[0] == .objectPath(path) && parts[3] == .string("text/plain; charset=utf8"))
        let (theirIV, theirCiphertext) = (try #require(parts[1].bytes), try #require(parts[2].bytes))
        #expect(theirIV.count == 16 && theirCiphertext != secret)
        #expect(try peer.decrypt(theirCiphertext, key: key, iv: theirIV) == secret)

        // Garbage in the session's ciphertext: refused, nothing kept changes.
        #expect(await provider.failure(client, "org.touchstone.Test", "Store",
                                       [.tuple([.objectPath(path), .bytes(iv), .bytes([1, 2, 3]), .string("x")])]) == Sessions.invalidArgs)
        let again = try await provider.call(client, "org.touchstone.Test", "Fetch", [.objectPath(path)])
        let againParts = try #require(again.first?.tupleItems)
        #expect(try peer.decrypt(try #require(againParts[2].bytes), key: key, iv: try #require(againParts[1].bytes)) == secret)
    }

    @Test("an unknown algorithm is NotSupported (libsecret then asks for plain); a DH input that is not a usable public key is InvalidArgs")
    func badOpens() async throws {
        let provider = try await Provider()
        defer { provider.rig.close() }
        let client = try await provider.client()
        let service = "org.freedesktop.Secret.Service"
        #expect(await provider.failure(client, service, "OpenSession", [.string("rot13"), .variant(.string(""))]) == Sessions.notSupported)
        for input in [DBusValue.string("not bytes"), .bytes([]), .bytes([0]), .bytes([1]), .bytes([UInt8](repeating: 0xff, count: 128)),
                      .bytes([UInt8](repeating: 1, count: 200))] {
            #expect(await provider.failure(client, service, "OpenSession", [.string(TransferKey.algorithm), .variant(input)])
                    == Sessions.invalidArgs, "\(input)")
        }
        #expect(try await provider.open(client, "plain", .string("")).1.hasPrefix(Sessions.pathPrefix), "the provider goes on serving")
    }

    @Test("a session is its client's: another connection can neither use nor close it; a client that leaves the bus has its sessions closed")
    func sessionsAreTheirClients() async throws {
        let provider = try await Provider()
        defer { provider.rig.close() }
        var alice: DBusBus? = try await provider.client()
        let bob = try await provider.client()
        let (_, path) = try await provider.open(alice!, "plain", .string(""))
        _ = try await provider.call(alice!, "org.touchstone.Test", "Store",
                                    [.tuple([.objectPath(path), .bytes([]), .bytes(Array("alice's".utf8)), .string("text/plain")])])
        #expect(await provider.failure(bob, "org.touchstone.Test", "Fetch", [.objectPath(path)]) == Sessions.noSession)
        #expect(await provider.failure(bob, "org.touchstone.Test", "Store",
                                       [.tuple([.objectPath(path), .bytes([]), .bytes([1]), .string("x")])]) == Sessions.noSession)
        #expect(await provider.failure(bob, "org.freedesktop.Secret.Session", "Close", [], path: path) == Sessions.noSession)
        #expect(try await provider.call(alice!, "org.touchstone.Test", "Fetch", [.objectPath(path)]).count == 1, "alice's session still works")

        let (_, bobs) = try await provider.open(bob, "plain", .string(""))
        let sessions = provider.service.sessions
        #expect(sessions.count == 2)
        alice = nil  // her connection closes: she leaves the bus
        #expect(try await eventually { sessions.count == 1 }, "alice's session stayed open after she left")
        #expect(sessions.isOpen(bobs, for: bob.uniqueName))
    }
}
