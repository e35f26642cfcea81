import Foundation
import Synchronization
import Testing
import TouchstoneModel
import TouchstoneSecure
@testable import TouchstoneFIDO

/// The CTAP 2.1 authenticator above its seam (`FIDOAuthenticatorStore`):
/// what each command makes of its parameters, with a store that records
/// what it was asked and signs with a fixed r and s. The real store (the
/// vault, the TPM, the reader) is `PasskeyTests`' through python-fido2.
@Suite("CTAP 2.1 authenticator: commands, parameters and statuses")
struct CTAP2AuthenticatorTests {
    /// A store that records its calls; credentials in memory.
    final class RecordingStore: FIDOAuthenticatorStore {
        let credentials = Mutex<[FIDOCredentialInfo]>([])
        let calls = Mutex<[String]>([])
        let refuse = Atomic<Bool>(false)
        /// The hmac-secret salts each assertion was given.
        let salts = Mutex<[[UInt8]?]>([])
        /// The reasons made credentials and assertions were asked with.
        let reasons = Mutex<[String]>([])

        func credentials(relyingParty: String) async throws(CTAP2.Status) -> [FIDOCredentialInfo] {
            calls.withLock { $0.append("list \(relyingParty)") }
            return credentials.withLock { $0.filter { $0.relyingParty == relyingParty } }
        }

        func make(_ request: FIDOCredentialRequest, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?,
                  reason: String) async throws(CTAP2.Status) -> FIDOMadeCredential {
            calls.withLock { $0.append("make \(request.relyingParty) uv=\(userVerification) rk=\(request.discoverable) cp=\(request.credProtect)") }
            reasons.withLock { $0.append(reason) }
            if refuse.load(ordering: .relaxed) { throw .operationDenied }
            var info = FIDOCredentialInfo(id: [UInt8](repeating: UInt8(credentials.withLock { $0.count } + 1), count: 32), relyingParty: request.relyingParty,
                                          userID: request.userID, userName: request.userName, userDisplayName: request.userDisplayName,
                                          discoverable: request.discoverable, verificationRequired: request.verificationRequired,
                                          credProtect: request.credProtect, access: request.access,
                                          created: Date(timeIntervalSince1970: Double(1_800_000_000 + credentials.withLock { $0.count })),
                                          publicPoint: [0x04] + [UInt8](repeating: 7, count: 64))
            info.hmacSecret = request.hmacSecret
            credentials.withLock { $0.append(info) }
            let data = AuthenticatorData.encode(rpIDHash: AuthenticatorData.sha256(Array(request.relyingParty.utf8)),
                                                flags: 0x01 | (userVerification ? 0x04 : 0), signCount: 1,
                                                attested: AuthenticatorData.attestedCredentialData(id: info.id, publicPoint: info.publicPoint),
                                                extensions: extensions)
            return FIDOMadeCredential(credential: info, attestation: FIDOAssertion(authenticatorData: data, signature: SSHSignature(r: [1], s: [2])))
        }

        func verifyUser(reason: String) async throws(CTAP2.Status) {
            calls.withLock { $0.append("verify") }
            if refuse.load(ordering: .relaxed) { throw .operationDenied }
        }

        func allCredentials() async throws(CTAP2.Status) -> [FIDOCredentialInfo] { credentials.withLock { $0 } }

        func delete(_ credential: FIDOCredentialInfo, reason: String) async throws(CTAP2.Status) {
            calls.withLock { $0.append("delete \(credential.id[0])") }
            if refuse.load(ordering: .relaxed) { throw .operationDenied }
            credentials.withLock { $0.removeAll { $0.id == credential.id } }
        }

        func updateUser(_ credential: FIDOCredentialInfo, name: String, displayName: String, reason: String) async throws(CTAP2.Status) {
            calls.withLock { $0.append("update \(credential.id[0]) \(name)/\(displayName)") }
            if refuse.load(ordering: .relaxed) { throw .operationDenied }
            credentials.withLock { all in
                for index in all.indices where all[index].id == credential.id {
                    all[index].userName = name
                    all[index].userDisplayName = displayName
                }
            }
        }

        func reset(reason: String) async throws(CTAP2.Status) {
            calls.withLock { $0.append("reset") }
            if refuse.load(ordering: .relaxed) { throw .operationDenied }
            credentials.withLock { $0.removeAll { !$0.relyingParty.hasPrefix("ssh:") } }
        }

        func assert(_ credential: FIDOCredentialInfo, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?,
                    hmacSecret: (salts: [UInt8], shared: SecureBytes)?, reason: String) async throws(CTAP2.Status) -> FIDOAssertion {
            calls.withLock { $0.append("assert \(credential.id[0]) uv=\(userVerification)") }
            salts.withLock { $0.append(hmacSecret?.salts) }
            if refuse.load(ordering: .relaxed) { throw .operationDenied }
            let data = AuthenticatorData.encode(rpIDHash: AuthenticatorData.sha256(Array(credential.relyingParty.utf8)),
                                                flags: 0x01 | (userVerification ? 0x04 : 0), signCount: 2, attested: nil, extensions: nil)
            return FIDOAssertion(authenticatorData: data, signature: SSHSignature(r: [1], s: [2]))
        }
    }

    static let hash = CBOR.bytes([UInt8](repeating: 0xAB, count: 32))
    static let es256 = CBOR.array([.map([.init(.text("alg"), .int(-7)), .init(.text("type"), .text("public-key"))])])

    static func makeCredential(rp: String = "example.org", user: String = "alice", options: [CBOR.Entry] = [], extra: [CBOR.Entry] = [],
                               algorithms: CBOR = es256) -> [UInt8] {
        var entries: [CBOR.Entry] = [
            .init(.int(1), hash),
            .init(.int(2), .map([.init(.text("id"), .text(rp))])),
            .init(.int(3), .map([.init(.text("id"), .bytes(Array(user.utf8))), .init(.text("name"), .text(user))])),
            .init(.int(4), algorithms),
        ]
        if !options.isEmpty { entries.append(.init(.int(7), .map(options))) }
        return [0x01] + CBOR.map(entries + extra).encoded()
    }

    static func getAssertion(rp: String = "example.org", allow: [[UInt8]]? = nil, options: [CBOR.Entry] = []) -> [UInt8] {
        var entries: [CBOR.Entry] = [.init(.int(1), .text(rp)), .init(.int(2), hash)]
        if let allow {
            entries.append(.init(.int(3), .array(allow.map { .map([.init(.text("id"), .bytes($0)), .init(.text("type"), .text("public-key"))]) })))
        }
        if !options.isEmpty { entries.append(.init(.int(5), .map(options))) }
        return [0x02] + CBOR.map(entries).encoded()
    }

    static func answer(_ bytes: [UInt8]) throws -> (UInt8, CBOR?) {
        let status = try #require(bytes.first)
        return (status, bytes.count > 1 ? try CBOR.decode(Array(bytes.dropFirst())) : nil)
    }

    @Test("getInfo: versions, the AAGUID, rk/up/uv built in, tokens and credMgmt but no clientPin, ES256 only, credProtect and hmac-secret")
    func info() async throws {
        let authenticator = CTAP2Authenticator(store: RecordingStore())
        let (status, body) = try Self.answer(await authenticator.handle([0x04]))
        #expect(status == 0)
        let info = try #require(body)
        #expect(info[1] == .array([.text("FIDO_2_0"), .text("FIDO_2_1")]))
        #expect(info[2] == .array([.text("credProtect"), .text("hmac-secret")]))
        #expect(info[3] == .bytes(AuthenticatorData.aaguid))
        #expect(info[4]?["uv"] == .bool(true) && info[4]?["rk"] == .bool(true) && info[4]?["clientPin"] == nil)
        #expect(info[4]?["pinUvAuthToken"] == .bool(true) && info[4]?["credMgmt"] == .bool(true))
        #expect(info[10] == Self.es256)
    }

    @Test("makeCredential: packed self attestation over the store's authenticator data (AT set, the COSE key inside); rk, uv and credProtect reach the store; credProtect's output is signed")
    func makeCredential() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        let request = Self.makeCredential(options: [.init(.text("rk"), .bool(true)), .init(.text("uv"), .bool(true))],
                                          extra: [.init(.int(6), .map([.init(.text("credProtect"), .int(2))]))])
        let (status, body) = try Self.answer(await authenticator.handle(request))
        #expect(status == 0)
        let made = try #require(body)
        #expect(made[1] == .text("packed"))
        #expect(made[3]?["alg"] == .int(-7) && made[3]?["sig"]?.bytesValue == [0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x02])
        let data = try #require(made[2]?.bytesValue)
        #expect(data[32] == 0x01 | 0x04 | 0x40 | 0x80, "UP, UV, AT, ED")
        #expect(Array(data[37..<53]) == AuthenticatorData.aaguid)
        let tail = try CBOR.decode(Array(data.suffix(CBOR.map([.init(.text("credProtect"), .int(2))]).encoded().count)))
        #expect(tail == .map([.init(.text("credProtect"), .int(2))]))
        #expect(store.calls.withLock { $0 } == ["make example.org uv=true rk=true cp=2"])
    }

    @Test("a relying party's id is the client's words: the prompt shows it escaped (no newline, tab or terminal escape) and cut, the credential keeps it byte for byte; a plain one is shown as it is")
    func relyingPartyShownEscaped() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        let hostile = "bank.example\n\u{1B}[2Jtouch now to unlock everything\t" + String(repeating: "x", count: 200)
        for rp in ["example.org", hostile] {
            let (status, _) = try Self.answer(await authenticator.handle(Self.makeCredential(rp: rp)))
            #expect(status == 0)
        }
        let reasons = store.reasons.withLock { $0 }
        #expect(reasons.first == "register with example.org")
        let shown = try #require(reasons.last)
        #expect(shown.hasPrefix("register with bank.example\\u{000A}\\u{001B}[2Jtouch now to unlock everything\\u{0009}xxx") && shown.hasSuffix("..."),
                "\(shown)")
        #expect(!shown.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } && shown.count < 140, "\(shown)")
        #expect(store.credentials.withLock { $0.map(\.relyingParty) } == ["example.org", hostile])
    }

    @Test("attestation formats: packed by default, none when the client prefers it (attestationFormatsPreference), packed when it names only formats not offered; getInfo lists both")
    func attestationFormats() async throws {
        let authenticator = CTAP2Authenticator(store: RecordingStore())
        let (_, info) = try Self.answer(await authenticator.handle([0x04]))
        #expect(info?[0x16] == .array([.text("packed"), .text("none")]))
        func format(_ preference: [String]?) async throws -> CBOR? {
            let extra: [CBOR.Entry] = preference.map { [.init(.int(11), .array($0.map { .text($0) }))] } ?? []
            let (status, made) = try Self.answer(await authenticator.handle(Self.makeCredential(extra: extra)))
            #expect(status == 0)
            return made
        }
        #expect(try await format(nil)?[1] == .text("packed"))
        let none = try await format(["none", "packed"])
        #expect(none?[1] == .text("none") && none?[3] == .map([]) && none?[2]?.bytesValue?[32] == 0x41, "UP and AT, the credential inside")
        #expect(try await format(["tpm", "packed"])?[1] == .text("packed"))
        #expect(try await format(["tpm"])?[1] == .text("packed"))
    }

    @Test("makeCredential refuses before the store is asked: no ES256 (UNSUPPORTED_ALGORITHM), up false (INVALID_OPTION), a missing or mistyped parameter, a pinUvAuthParam without a token, enterprise attestation, CBOR garbage; an excluded credential (CREDENTIAL_EXCLUDED) makes nothing")
    func makeCredentialRefusals() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        let rs256 = CBOR.array([.map([.init(.text("alg"), .int(-257)), .init(.text("type"), .text("public-key"))])])
        let cases: [([UInt8], CTAP2.Status)] = [
            (Self.makeCredential(algorithms: rs256), .unsupportedAlgorithm),
            (Self.makeCredential(options: [.init(.text("up"), .bool(false))]), .invalidOption),
            (Self.makeCredential(extra: [.init(.int(8), .bytes([]))]), .pinNotSet),
            (Self.makeCredential(extra: [.init(.int(8), .bytes([1, 2, 3]))]), .missingParameter),
            (Self.makeCredential(extra: [.init(.int(8), .bytes([1, 2, 3])), .init(.int(9), .int(1))]), .invalidParameter),
            (Self.makeCredential(extra: [.init(.int(8), .bytes([1, 2, 3])), .init(.int(9), .int(2))]), .pinAuthInvalid),
            (Self.makeCredential(extra: [.init(.int(10), .int(1))]), .invalidParameter),
            ([0x01] + CBOR.map([.init(.int(1), Self.hash)]).encoded(), .missingParameter),
            ([0x01] + CBOR.map([.init(.int(1), .text("not bytes")), .init(.int(2), .map([]))]).encoded(), .cborUnexpectedType),
            ([0x01] + CBOR.map([.init(.int(1), .bytes([1, 2, 3]))]).encoded(), .invalidLength),
            ([0x01, 0xA1, 0x01], .invalidCBOR),
            ([0x01] + CBOR.array([]).encoded(), .cborUnexpectedType),
            ([0x42], .invalidCommand),
            ([], .invalidLength),
        ]
        for (request, expected) in cases {
            #expect(await authenticator.handle(request) == [expected.rawValue], "\(request.prefix(12))")
        }
        #expect(store.calls.withLock { $0 }.isEmpty, "\(store.calls.withLock { $0 })")

        #expect(try Self.answer(await authenticator.handle(Self.makeCredential())).0 == 0)
        let id = try #require(store.credentials.withLock { $0.first?.id })
        let excluded = Self.makeCredential(extra: [.init(.int(5), .array([.map([.init(.text("id"), .bytes(id)), .init(.text("type"), .text("public-key"))])]))])
        store.calls.withLock { $0 = [] }
        #expect(await authenticator.handle(excluded) == [CTAP2.Status.credentialExcluded.rawValue])
        #expect(store.calls.withLock { $0 } == ["list example.org", "verify"], "said only after the person's presence")
        #expect(store.credentials.withLock { $0.count } == 1)
        // Presence refused: the page learns nothing, and nothing is made.
        store.refuse.store(true, ordering: .relaxed)
        #expect(await authenticator.handle(excluded) == [CTAP2.Status.operationDenied.rawValue])
        store.refuse.store(false, ordering: .relaxed)
        #expect(store.credentials.withLock { $0.count } == 1)
    }

    @Test("an excluded credential with credProtect 3 is not revealed to a request without user verification (a new one is made), and is to one with it (CREDENTIAL_EXCLUDED after presence)")
    func excludedNeedsVerification() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        let protected: [CBOR.Entry] = [.init(.int(6), .map([.init(.text("credProtect"), .int(3))]))]
        #expect(try Self.answer(await authenticator.handle(Self.makeCredential(extra: protected))).0 == 0)
        let id = try #require(store.credentials.withLock { $0.first?.id })
        let exclude: CBOR.Entry = .init(.int(5), .array([.map([.init(.text("id"), .bytes(id)), .init(.text("type"), .text("public-key"))])]))
        #expect(try Self.answer(await authenticator.handle(Self.makeCredential(extra: [exclude]))).0 == 0)
        #expect(store.credentials.withLock { $0.count } == 2)
        let verified = Self.makeCredential(options: [.init(.text("uv"), .bool(true))], extra: [exclude])
        #expect(await authenticator.handle(verified) == [CTAP2.Status.credentialExcluded.rawValue])
        #expect(store.credentials.withLock { $0.count } == 2)
    }

    @Test("selection answers only after the person's presence; refused, OPERATION_DENIED")
    func selectionWaitsForPresence() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        #expect(await authenticator.handle([CTAP2.Command.selection.rawValue]) == [CTAP2.Status.success.rawValue])
        #expect(store.calls.withLock { $0 } == ["verify"])
        store.refuse.store(true, ordering: .relaxed)
        #expect(await authenticator.handle([CTAP2.Command.selection.rawValue]) == [CTAP2.Status.operationDenied.rawValue])
    }

    @Test("a probe (up false) answers the listed credential with no signature and never asks the store to sign; a real assertion does")
    func probe() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        _ = await authenticator.handle(Self.makeCredential())
        let id = try #require(store.credentials.withLock { $0.first?.id })
        let (status, body) = try Self.answer(await authenticator.handle(Self.getAssertion(allow: [[9, 9], id], options: [.init(.text("up"), .bool(false))])))
        #expect(status == 0)
        #expect(body?[1]?["id"] == .bytes(id) && body?[3] == .bytes([]))
        #expect(body?[2]?.bytesValue?[32] == 0, "no flags on a probe")
        #expect(!store.calls.withLock { $0 }.contains { $0.hasPrefix("assert") })
        let (signed, assertion) = try Self.answer(await authenticator.handle(Self.getAssertion(allow: [id])))
        #expect(signed == 0 && assertion?[3]?.bytesValue?.isEmpty == false && assertion?[4] == nil, "no user for an allowList assertion")
        #expect(store.calls.withLock { $0 }.last == "assert 1 uv=false")
        #expect(await authenticator.handle(Self.getAssertion(allow: [[9, 9]])) == [CTAP2.Status.noCredentials.rawValue])
        #expect(await authenticator.handle(Self.getAssertion(rp: "other.org", allow: [id])) == [CTAP2.Status.noCredentials.rawValue])
    }

    @Test("discoverable sign-in: newest first with numberOfCredentials, getNextAssertion the next, then NOT_ALLOWED; credProtect 2 not discovered without UV, 3 not used without UV; names only to a verified user")
    func discoverable() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        let rk = CBOR.Entry(.text("rk"), .bool(true))
        _ = await authenticator.handle(Self.makeCredential(user: "alice", options: [rk]))
        _ = await authenticator.handle(Self.makeCredential(user: "bob", options: [rk]))
        _ = await authenticator.handle(Self.makeCredential(user: "carol", options: [rk], extra: [.init(.int(6), .map([.init(.text("credProtect"), .int(2))]))]))
        _ = await authenticator.handle(Self.makeCredential(user: "dave", extra: [.init(.int(6), .map([.init(.text("credProtect"), .int(3))]))]))

        let (status, first) = try Self.answer(await authenticator.handle(Self.getAssertion()))
        #expect(status == 0 && first?[5] == .int(2), "alice and bob, not carol without UV: \(String(describing: first))")
        #expect(first?[4] == .map([.init(.text("id"), .bytes(Array("bob".utf8)))]), "the newest, its id only (not verified)")
        let (_, second) = try Self.answer(await authenticator.handle([0x08]))
        #expect(second?[4]?["id"] == .bytes(Array("alice".utf8)))
        #expect(await authenticator.handle([0x08]) == [CTAP2.Status.notAllowed.rawValue])

        let (_, verified) = try Self.answer(await authenticator.handle(Self.getAssertion(options: [.init(.text("uv"), .bool(true))])))
        #expect(verified?[5] == .int(3) && verified?[4]?["name"] == .text("carol"), "carol with UV, named: \(String(describing: verified))")

        let dave = try #require(store.credentials.withLock { $0.last?.id })
        #expect(await authenticator.handle(Self.getAssertion(allow: [dave])) == [CTAP2.Status.noCredentials.rawValue])
        #expect(try Self.answer(await authenticator.handle(Self.getAssertion(allow: [dave], options: [.init(.text("uv"), .bool(true))]))).0 == 0)
    }

    @Test("hmac-secret: clientPIN getKeyAgreement gives a P-256 key (protocol 2 only); the salts reach the store once saltAuth proves the shared secret; a wrong saltAuth is PIN_AUTH_INVALID and a key off the curve INVALID_PARAMETER, the store not asked; a probe carries none")
    func hmacSecret() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        #expect(try Self.answer(await authenticator.handle(Self.makeCredential(extra: [.init(.int(6), .map([.init(.text("hmac-secret"), .bool(true))]))]))).0 == 0)
        let id = try #require(store.credentials.withLock { $0.first?.id })
        #expect(store.credentials.withLock { $0.first?.hmacSecret } == true, "the request asked for hmac-secret")

        let getKey = [0x06] + CBOR.map([.init(.int(1), .int(2)), .init(.int(2), .int(2))]).encoded()
        let (status, body) = try Self.answer(await authenticator.handle(getKey))
        #expect(status == 0)
        let authenticatorKey = try #require(body?[1])
        #expect(authenticatorKey[3] == .int(-25) && authenticatorKey[-2]?.bytesValue?.count == 32)
        #expect(await authenticator.handle([0x06] + CBOR.map([.init(.int(1), .int(1)), .init(.int(2), .int(2))]).encoded())
                == [CTAP2.Status.invalidParameter.rawValue], "protocol 1")

        // The platform's side: its own key, the same shared secret.
        let platform = try PinUvAuthProtocolTwo.KeyAgreement()
        let shared = try platform.sharedSecret(platform: authenticatorKey)
        let salts = [UInt8](repeating: 0x11, count: 32) + [UInt8](repeating: 0x22, count: 32)
        let saltEnc = try PinUvAuthProtocolTwo.encrypt(shared, salts)
        func assertion(auth: [UInt8], key: CBOR = platform.coseKey, up: Bool = true) -> [UInt8] {
            let ext = CBOR.map([.init(.text("hmac-secret"), .map([.init(.int(1), key), .init(.int(2), .bytes(saltEnc)),
                                                                     .init(.int(3), .bytes(auth)), .init(.int(4), .int(2))]))])
            let allow = CBOR.array([.map([.init(.text("id"), .bytes(id)), .init(.text("type"), .text("public-key"))])])
            var entries: [CBOR.Entry] = [.init(.int(1), .text("example.org")), .init(.int(2), Self.hash), .init(.int(3), allow), .init(.int(4), ext)]
            if !up { entries.append(.init(.int(5), .map([.init(.text("up"), .bool(false))]))) }
            return [0x02] + CBOR.map(entries).encoded()
        }
        let good = PinUvAuthProtocolTwo.authenticate(shared, saltEnc)
        #expect(await authenticator.handle(assertion(auth: good.map { $0 ^ 1 })) == [CTAP2.Status.pinAuthInvalid.rawValue])
        var offCurve = platform.coseKey.mapValue!
        offCurve[3] = .init(.int(-2), .bytes([UInt8](repeating: 1, count: 32)))
        #expect(await authenticator.handle(assertion(auth: good, key: .map(offCurve))).first != 0, "a platform key not on the curve")
        #expect(store.salts.withLock { $0 }.isEmpty, "the store was asked for a refused request")
        #expect(try Self.answer(await authenticator.handle(assertion(auth: good))).0 == 0)
        #expect(try Self.answer(await authenticator.handle(assertion(auth: good, up: false))).0 == 0)
        #expect(store.salts.withLock { $0 } == [salts], "the salts, decrypted, and nothing for the probe")
        let outputs = try PinUvAuthProtocolTwo.decrypt(shared, PinUvAuthProtocolTwo.encrypt(shared, salts))
        #expect(outputs == salts, "encrypt and decrypt are inverses")
    }

    /// A token through getPinUvAuthTokenUsingUvWithPermissions, as a platform gets it.
    static func token(_ authenticator: CTAP2Authenticator, permissions: Int, rp: String? = nil) async throws -> (CTAP2.Status, SecureBytes?) {
        let (_, key) = try answer(await authenticator.handle([0x06] + CBOR.map([.init(.int(1), .int(2)), .init(.int(2), .int(2))]).encoded()))
        let platform = try PinUvAuthProtocolTwo.KeyAgreement()
        let shared = try platform.sharedSecret(platform: try #require(key?[1]))
        var entries: [CBOR.Entry] = [.init(.int(1), .int(2)), .init(.int(2), .int(6)), .init(.int(3), platform.coseKey), .init(.int(9), .int(permissions))]
        if let rp { entries.append(.init(.int(10), .text(rp))) }
        let (status, body) = try answer(await authenticator.handle([0x06] + CBOR.map(entries).encoded()))
        guard status == 0, let sealed = body?[2]?.bytesValue else { return (CTAP2.Status(rawValue: status) ?? .other, nil) }
        return (.success, SecureBytes(copying: try PinUvAuthProtocolTwo.decrypt(shared, sealed)))
    }

    @Test("tokens: one for makeCredential and getAssertion asks nothing of the store (each ceremony asks its own touch), and its pinUvAuthParam makes the request a verified one; a wrong one is PIN_AUTH_INVALID with the store not asked; a token for credential management needs the user verified; permissions not offered are UNAUTHORIZED_PERMISSION")
    func tokens() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        let (status, token) = try await Self.token(authenticator, permissions: 0x03, rp: "example.org")
        #expect(status == .success && token?.count == 32)
        #expect(store.calls.withLock { $0 }.isEmpty)
        let key = try #require(token)
        let param = PinUvAuthProtocolTwo.authenticate(key, Self.hash.bytesValue!)
        let wrong = Self.makeCredential(extra: [.init(.int(8), .bytes(param.map { $0 ^ 0x80 })), .init(.int(9), .int(2))])
        #expect(await authenticator.handle(wrong) == [CTAP2.Status.pinAuthInvalid.rawValue])
        #expect(store.calls.withLock { $0 }.isEmpty)
        let other = Self.makeCredential(rp: "other.org", extra: [.init(.int(8), .bytes(param)), .init(.int(9), .int(2))])
        #expect(await authenticator.handle(other) == [CTAP2.Status.pinAuthInvalid.rawValue], "a token bound to example.org")
        let right = Self.makeCredential(extra: [.init(.int(8), .bytes(param)), .init(.int(9), .int(2))])
        #expect(try Self.answer(await authenticator.handle(right)).0 == 0)
        #expect(store.calls.withLock { $0 } == ["make example.org uv=true rk=false cp=1"])

        #expect(try await Self.token(authenticator, permissions: 0x08).0 == .unauthorizedPermission)
        #expect(try await Self.token(authenticator, permissions: 0x04).0 == .success)
        #expect(store.calls.withLock { $0 }.last == "verify")
        store.refuse.store(true, ordering: .relaxed)
        #expect(try await Self.token(authenticator, permissions: 0x04).0 == .operationDenied, "no token without the user verified")
        #expect(await authenticator.handle(right) == [CTAP2.Status.pinAuthInvalid.rawValue], "asking for a new token ended the old one")
    }

    @Test("credentialManagement with a token: metadata, relying parties and their discoverable credentials one by one, a user's names changed and a deletion through the store; without a token nothing, a wrong one PIN_AUTH_INVALID, another user handle INVALID_PARAMETER")
    func credentialManagement() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        let rk = CBOR.Entry(.text("rk"), .bool(true))
        _ = await authenticator.handle(Self.makeCredential(user: "alice", options: [rk]))
        _ = await authenticator.handle(Self.makeCredential(rp: "other.org", user: "bob", options: [rk]))
        _ = await authenticator.handle(Self.makeCredential(user: "carol"))
        func request(_ subcommand: Int, _ parameters: CBOR?, token: SecureBytes?) -> [UInt8] {
            var entries: [CBOR.Entry] = [.init(.int(1), .int(subcommand))]
            if let parameters { entries.append(.init(.int(2), parameters)) }
            if let token {
                entries.append(.init(.int(3), .int(2)))
                entries.append(.init(.int(4), .bytes(PinUvAuthProtocolTwo.authenticate(token, [UInt8(subcommand)] + (parameters?.encoded() ?? [])))))
            }
            return [0x0A] + CBOR.map(entries).encoded()
        }
        #expect(await authenticator.handle(request(1, nil, token: nil)) == [CTAP2.Status.missingParameter.rawValue])
        let key = try #require(try await Self.token(authenticator, permissions: 0x04).1)
        #expect(await authenticator.handle(request(1, nil, token: SecureBytes(copying: [UInt8](repeating: 1, count: 32))))
                == [CTAP2.Status.pinAuthInvalid.rawValue])
        let (_, metadata) = try Self.answer(await authenticator.handle(request(1, nil, token: key)))
        #expect(metadata?[1] == .int(2), "two discoverable credentials")
        let (_, firstRP) = try Self.answer(await authenticator.handle(request(2, nil, token: key)))
        #expect(firstRP?[3]?["id"] == .text("example.org") && firstRP?[5] == .int(2))
        let (_, secondRP) = try Self.answer(await authenticator.handle([0x0A] + CBOR.map([.init(.int(1), .int(3))]).encoded()))
        #expect(secondRP?[3]?["id"] == .text("other.org") && secondRP?[4] == .bytes(AuthenticatorData.sha256(Array("other.org".utf8))))
        #expect(await authenticator.handle([0x0A] + CBOR.map([.init(.int(1), .int(3))]).encoded()) == [CTAP2.Status.notAllowed.rawValue])
        let hash = CBOR.map([.init(.int(1), .bytes(AuthenticatorData.sha256(Array("example.org".utf8))))])
        let (_, credential) = try Self.answer(await authenticator.handle(request(4, hash, token: key)))
        #expect(credential?[6]?["name"] == .text("alice") && credential?[9] == .int(1) && credential?[8]?[3] == .int(-7))
        let id = try #require(credential?[7]?["id"]?.bytesValue)
        let userID = try #require(credential?[6]?["id"]?.bytesValue)

        // updateUserInformation: the names changed through the store (an
        // absent display name removed); another user handle INVALID_PARAMETER,
        // no token nothing.
        let idEntry = CBOR.Entry(.int(2), .map([.init(.text("id"), .bytes(id)), .init(.text("type"), .text("public-key"))]))
        func update(_ handle: [UInt8], name: String) -> CBOR {
            .map([idEntry, .init(.int(3), .map([.init(.text("id"), .bytes(handle)), .init(.text("name"), .text(name))]))])
        }
        #expect(await authenticator.handle(request(7, update(userID, name: "alice@example.org"), token: nil)) == [CTAP2.Status.missingParameter.rawValue])
        #expect(await authenticator.handle(request(7, update([9, 9], name: "mallory"), token: key)) == [CTAP2.Status.invalidParameter.rawValue])
        #expect(try Self.answer(await authenticator.handle(request(7, update(userID, name: "alice@example.org"), token: key))).0 == 0)
        #expect(store.calls.withLock { $0 }.last == "update \(id[0]) alice@example.org/")
        let (_, renamed) = try Self.answer(await authenticator.handle(request(4, hash, token: key)))
        #expect(renamed?[6]?["name"] == .text("alice@example.org") && renamed?[6]?["id"] == .bytes(userID))

        let descriptor = CBOR.map([idEntry])
        #expect(try Self.answer(await authenticator.handle(request(6, descriptor, token: key))).0 == 0)
        #expect(store.calls.withLock { $0 }.last == "delete \(id[0])")
        #expect(!store.credentials.withLock { $0 }.contains { $0.id == id })
        #expect(await authenticator.handle(request(6, descriptor, token: key)) == [CTAP2.Status.noCredentials.rawValue])
    }

    @Test("the store's refusal is the answer (a stranger's touch: OPERATION_DENIED), and the next request is served")
    func refusalPassesThrough() async throws {
        let store = RecordingStore()
        let authenticator = CTAP2Authenticator(store: store)
        _ = await authenticator.handle(Self.makeCredential(options: [.init(.text("rk"), .bool(true))]))
        store.refuse.store(true, ordering: .relaxed)
        #expect(await authenticator.handle(Self.getAssertion()) == [CTAP2.Status.operationDenied.rawValue])
        #expect(await authenticator.handle(Self.makeCredential(user: "bob")) == [CTAP2.Status.operationDenied.rawValue])
        store.refuse.store(false, ordering: .relaxed)
        #expect(try Self.answer(await authenticator.handle(Self.getAssertion())).0 == 0)
    }
}
