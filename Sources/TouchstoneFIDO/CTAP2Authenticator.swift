import Foundation
import TouchstoneModel
import TouchstoneSecure

/// What the authenticator needs of Touchstone's FIDO credentials (the
/// public API's `device.fido`, through either engine): a failure is a
/// CTAP status already (the adapter maps Touchstone's errors).
package protocol FIDOAuthenticatorStore: Sendable {
    /// The credentials of `relyingParty`, usable ones only.
    func credentials(relyingParty: String) async throws(CTAP2.Status) -> [FIDOCredentialInfo]
    /// A registration: the new credential and its attestation, after the touch.
    func make(_ request: FIDOCredentialRequest, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?,
              reason: String) async throws(CTAP2.Status) -> FIDOMadeCredential
    /// Built-in user verification on its own (a finger, or the passcode):
    /// what a token for credential management needs, and, Touchstone's
    /// user presence being the same, what selection and an excluded
    /// registration wait for.
    func verifyUser(reason: String) async throws(CTAP2.Status)
    /// Every credential (credential management).
    func allCredentials() async throws(CTAP2.Status) -> [FIDOCredentialInfo]
    /// Deletes `credential` after what its signatures need.
    func delete(_ credential: FIDOCredentialInfo, reason: String) async throws(CTAP2.Status)
    /// Changes `credential`'s user name and display name after what its
    /// signatures need.
    func updateUser(_ credential: FIDOCredentialInfo, name: String, displayName: String, reason: String) async throws(CTAP2.Status)
    /// The reset: every FIDO credential but OpenSSH's deleted, after the passcode.
    func reset(reason: String) async throws(CTAP2.Status)
    /// An assertion by `credential`, after the touch; with hmac-secret's
    /// salts and the shared secret that encrypts its outputs.
    func assert(_ credential: FIDOCredentialInfo, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?,
                hmacSecret: (salts: [UInt8], shared: SecureBytes)?, reason: String) async throws(CTAP2.Status) -> FIDOAssertion
}

/// The CTAP 2.1 authenticator (docs/fido.md): a CTAPHID_CBOR request's
/// payload in (the command byte, then its CBOR parameters), the answer out
/// (a status byte, then CBOR). Credentials are Touchstone's FIDO
/// credentials: TPM keys, each signature after the touch its access asks;
/// user verification is Touchstone's own (a finger, or the passcode), so
/// the authenticator offers `uv` and no client PIN.
package actor CTAP2Authenticator {
    /// The largest message a client may send (CTAPHID's largest payload).
    package static let maximumMessageSize = CTAPHID.maximumPayload
    /// The most credential ids a list may hold, and the longest id.
    package static let maximumCredentialsInList = 8
    package static let maximumCredentialIDLength = 128

    private let store: any FIDOAuthenticatorStore
    /// The access new credentials get.
    private let access: AccessControl
    /// What remains of a getAssertion for getNextAssertion.
    private var next: PendingAssertions?
    private let clock: @Sendable () -> Double
    /// PIN/UV auth protocol 2's key agreement key, made on first use.
    private var keyAgreement: PinUvAuthProtocolTwo.KeyAgreement?
    /// The pinUvAuthToken given out last (one at a time, as CTAP 2.1 has it).
    private var token: Token?
    /// What remains of a credential management enumeration.
    private var enumeration: [CBOR] = []

    private struct Token {
        let key: SecureBytes
        let permissions: Int
        let relyingParty: String?
        let issued: Double
    }

    /// How long a token serves (CTAP 2.1 lets an authenticator choose).
    package static let tokenLifetime: Double = 600
    /// Token permissions: makeCredential, getAssertion, credential management.
    package static let makeCredentialPermission = 0x01
    package static let getAssertionPermission = 0x02
    package static let credentialManagementPermission = 0x04
    /// What credential management says remains: the vault sets no limit.
    package static let remainingDiscoverable = 1000

    private struct PendingAssertions {
        var relyingParty: String
        var clientDataHash: [UInt8]
        var userVerification: Bool
        var credentials: [FIDOCredentialInfo]
        var hmacSecret: (salts: [UInt8], shared: SecureBytes)?
        var expires: Double
    }

    package init(store: any FIDOAuthenticatorStore, access: AccessControl = .userPresence,
                 clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        self.store = store
        self.access = access
        self.clock = clock
    }

    /// Whether a command waits for the person (KEEPALIVE says so
    /// meanwhile): not a probe (getAssertion with `up` false), which a
    /// client would take for a request to touch.
    package nonisolated static func awaitsUser(_ request: [UInt8]) -> Bool {
        guard let first = request.first, let command = CTAP2.Command(rawValue: first) else { return false }
        if command == .getAssertion, let parameters = try? CBOR.decode(Array(request.dropFirst())), parameters[5]?["up"] == .bool(false) {
            return false
        }
        return [.makeCredential, .getAssertion, .getNextAssertion, .selection, .reset].contains(command)
    }

    /// The answer to one request: a status byte, then the CBOR response.
    package func handle(_ request: [UInt8]) async -> [UInt8] {
        do throws(CTAP2.Status) {
            guard let first = request.first else { throw .invalidLength }
            guard let command = CTAP2.Command(rawValue: first) else { throw .invalidCommand }
            let parameters = try Self.parameters(Array(request.dropFirst()))
            if command != .getNextAssertion { next = nil }
            if command != .credentialManagement { enumeration = [] }
            let response: CBOR?
            switch command {
            case .getInfo: response = info()
            case .makeCredential: response = try await makeCredential(parameters)
            case .getAssertion: response = try await getAssertion(parameters)
            case .getNextAssertion: response = try await getNextAssertion()
            case .selection:
                // The person's presence (CTAP 2.1's authenticatorSelection):
                // a client asks every authenticator and keeps the one touched.
                try await awaitPresence(reason: "choose this authenticator (a client asks which one to use)")
                response = nil
            case .clientPIN: response = try await clientPIN(parameters)
            case .credentialManagement: response = try await credentialManagement(parameters)
            case .reset:
                // Asked of the person through Touchstone's own prompt (the
                // passcode), not by a touch alone as a USB key would.
                try await store.reset(reason: "reset the passkey authenticator: delete every passkey (ssh keys stay)")
                token = nil
                response = nil
            }
            return [CTAP2.Status.success.rawValue] + (response?.encoded() ?? [])
        } catch {
            return [error.rawValue]
        }
    }

    /// The parameters: a CBOR map with integer keys, or nothing.
    private static func parameters(_ bytes: [UInt8]) throws(CTAP2.Status) -> CBOR {
        if bytes.isEmpty { return .map([]) }
        let value: CBOR
        do { value = try CBOR.decode(bytes) } catch { throw .invalidCBOR }
        guard let entries = value.mapValue else { throw .cborUnexpectedType }
        guard entries.allSatisfy({ $0.key.intValue != nil }) else { throw .cborUnexpectedType }
        return value
    }

    // MARK: - getInfo

    private func info() -> CBOR {
        .map([
            .init(.int(1), .array([.text("FIDO_2_0"), .text("FIDO_2_1")])),
            .init(.int(2), .array([.text("credProtect"), .text("hmac-secret")])),
            .init(.int(3), .bytes(AuthenticatorData.aaguid)),
            .init(.int(4), .map([
                .init(.text("rk"), .bool(true)), .init(.text("up"), .bool(true)), .init(.text("uv"), .bool(true)),
                .init(.text("plat"), .bool(false)), .init(.text("pinUvAuthToken"), .bool(true)), .init(.text("credMgmt"), .bool(true)),
            ])),
            .init(.int(5), .int(Self.maximumMessageSize)),
            // pinUvAuthProtocols: python-fido2's client wants one named even
            // where it uses neither a PIN nor a token (options has neither
            // clientPin nor pinUvAuthToken: it sends uv instead).
            .init(.int(6), .array([.int(2)])),
            .init(.int(7), .int(Self.maximumCredentialsInList)),
            .init(.int(8), .int(Self.maximumCredentialIDLength)),
            .init(.int(9), .array([.text("usb")])),
            .init(.int(10), .array([.map([.init(.text("alg"), .int(AuthenticatorData.es256)), .init(.text("type"), .text("public-key"))])])),
            .init(.int(0x16), .array(Self.attestationFormats.map { .text($0) })),
        ])
    }

    // MARK: - makeCredential

    private func makeCredential(_ p: CBOR) async throws(CTAP2.Status) -> CBOR {
        let clientDataHash = try Self.clientDataHash(p[1])
        guard let rp = p[2] else { throw .missingParameter }
        guard rp.mapValue != nil, let rpID = try Self.text(rp["id"]) else { throw .cborUnexpectedType }
        guard let user = p[3] else { throw .missingParameter }
        guard user.mapValue != nil, let userID = user["id"]?.bytesValue else { throw .cborUnexpectedType }
        guard userID.count <= 64 else { throw .invalidLength }
        let userName = try Self.text(user["name"]) ?? ""
        let displayName = try Self.text(user["displayName"]) ?? ""
        guard let algorithms = p[4] else { throw .missingParameter }
        guard let list = algorithms.arrayValue else { throw .cborUnexpectedType }
        var es256 = false
        for entry in list {
            guard entry.mapValue != nil, let type = try Self.text(entry["type"]), let alg = entry["alg"]?.intValue else { throw .cborUnexpectedType }
            if type == "public-key" && alg == AuthenticatorData.es256 { es256 = true }
        }
        guard es256 else { throw .unsupportedAlgorithm }
        let options = try Self.options(p[7])
        if options["up"] == false { throw .invalidOption }
        let tokenVerified = try verifyToken(p[8], p[9], clientDataHash, permission: Self.makeCredentialPermission, relyingParty: rpID)
        if p[10] != nil { throw .invalidParameter }
        let format = try Self.attestationFormat(p[11])
        var credProtect: UInt8 = 1
        var hmacSecret = false
        var outputs: [CBOR.Entry] = []
        if let extensions = p[6] {
            guard extensions.mapValue != nil else { throw .cborUnexpectedType }
            if let level = extensions["credProtect"] {
                guard let n = level.intValue, (1...3).contains(n) else { throw .invalidParameter }
                credProtect = UInt8(n)
                outputs.append(.init(.text("credProtect"), .int(n)))
            }
            if let wanted = extensions["hmac-secret"] {
                guard let flag = wanted.boolValue else { throw .cborUnexpectedType }
                hmacSecret = flag
                if flag { outputs.append(.init(.text("hmac-secret"), .bool(true))) }
            }
        }
        let uv = options["uv"] ?? false || tokenVerified
        if let exclude = p[5] {
            let ids = try Self.credentialIDs(exclude)
            let existing = try await store.credentials(relyingParty: rpID)
            // A credential that needs verification (credProtect 3) is not
            // revealed to a request without it (CTAP 2.1); one that is
            // excluded is said so only after the person's presence, so that
            // a page cannot learn without them which credentials are here.
            if existing.contains(where: { ids.contains($0.id) && (uv || $0.credProtect < 3) }) {
                try await awaitPresence(reason: "\(SafeText.shown(rpID)) asks to register again, and this authenticator is already registered there")
                throw .credentialExcluded
            }
        }
        let request = FIDOCredentialRequest(relyingParty: rpID, userID: userID, userName: userName, userDisplayName: displayName,
                                            discoverable: options["rk"] ?? false, verificationRequired: credProtect == 3,
                                            credProtect: credProtect, access: access, hmacSecret: hmacSecret)
        let made = try await store.make(request, clientDataHash: clientDataHash, userVerification: uv,
                                        extensions: outputs.isEmpty ? nil : CBOR.map(outputs).encoded(),
                                        reason: "register with \(SafeText.shown(rpID))")
        if format == "none" {
            return .map([.init(.int(1), .text("none")), .init(.int(2), .bytes(made.attestation.authenticatorData)), .init(.int(3), .map([]))])
        }
        guard let signature = AuthenticatorData.derSignature(r: made.attestation.signature.r, s: made.attestation.signature.s) else { throw .other }
        return .map([
            .init(.int(1), .text("packed")),
            .init(.int(2), .bytes(made.attestation.authenticatorData)),
            .init(.int(3), .map([.init(.text("alg"), .int(AuthenticatorData.es256)), .init(.text("sig"), .bytes(signature))])),
        ])
    }

    /// Waits for the person's presence: OPERATION_DENIED when it is
    /// refused or does not come, KEEPALIVE_CANCEL when the client cancelled.
    private func awaitPresence(reason: String) async throws(CTAP2.Status) {
        do {
            try await store.verifyUser(reason: reason)
        } catch {
            throw error == .keepaliveCancel || error == .userActionTimeout ? error : .operationDenied
        }
    }

    /// The attestation formats offered, the default first: `packed` self
    /// attestation (the credential's own key signs), or `none`.
    package static let attestationFormats = ["packed", "none"]

    /// attestationFormatsPreference (CTAP 2.2, makeCredential's 0x0B): the
    /// first the client lists that is offered; without one, or with none
    /// offered, `packed`.
    private static func attestationFormat(_ value: CBOR?) throws(CTAP2.Status) -> String {
        guard let value else { return attestationFormats[0] }
        guard let list = value.arrayValue else { throw .cborUnexpectedType }
        for entry in list {
            guard let name = entry.textValue else { throw .cborUnexpectedType }
            if attestationFormats.contains(name) { return name }
        }
        return attestationFormats[0]
    }

    // MARK: - getAssertion

    private func getAssertion(_ p: CBOR) async throws(CTAP2.Status) -> CBOR {
        guard let rpValue = p[1] else { throw .missingParameter }
        guard let rpID = rpValue.textValue else { throw .cborUnexpectedType }
        let clientDataHash = try Self.clientDataHash(p[2])
        let options = try Self.options(p[5])
        if options["rk"] != nil { throw .unsupportedOption }
        let tokenVerified = try verifyToken(p[6], p[7], clientDataHash, permission: Self.getAssertionPermission, relyingParty: rpID)
        if let extensions = p[4], extensions.mapValue == nil { throw .cborUnexpectedType }
        let up = options["up"] ?? true
        let hmacSecret = up ? try hmacSecretInput(p[4]?["hmac-secret"]) : nil
        let uv = options["uv"] ?? false || tokenVerified
        let stored = try await store.credentials(relyingParty: rpID)
        var candidates: [FIDOCredentialInfo]
        let listed = p[3] != nil
        if let allow = p[3] {
            let ids = try Self.credentialIDs(allow)
            candidates = ids.compactMap { id in stored.first { $0.id == id } }
            // credProtect 3: only with user verification.
            candidates = candidates.filter { uv || $0.credProtect < 3 }
        } else {
            // Discoverable ones, newest first; credProtect 2 and 3 only with user verification.
            candidates = stored.filter { $0.discoverable && (uv || $0.credProtect < 2) }.sorted { $0.created > $1.created }
        }
        guard let first = candidates.first else { throw .noCredentials }
        if !up {
            // A probe (clients send one to learn which listed credential is
            // here): the TPM signs only after the touch, so no signature.
            let data = AuthenticatorData.encode(rpIDHash: Self.sha256(Array(rpID.utf8)), flags: 0, signCount: first.signCount, attested: nil, extensions: nil)
            return .map([
                .init(.int(1), Self.descriptor(first)),
                .init(.int(2), .bytes(data)),
                .init(.int(3), .bytes([])),
            ])
        }
        let response = try await assertion(first, rpID: rpID, clientDataHash: clientDataHash, userVerification: uv, hmacSecret: hmacSecret,
                                           discoverable: !listed, count: !listed && candidates.count > 1 ? candidates.count : nil)
        if !listed && candidates.count > 1 {
            next = PendingAssertions(relyingParty: rpID, clientDataHash: clientDataHash, userVerification: uv,
                                     credentials: Array(candidates.dropFirst()), hmacSecret: hmacSecret, expires: clock() + 30)
        }
        return response
    }

    private func getNextAssertion() async throws(CTAP2.Status) -> CBOR {
        guard var pending = next, pending.expires > clock(), !pending.credentials.isEmpty else {
            next = nil
            throw .notAllowed
        }
        let credential = pending.credentials.removeFirst()
        next = pending.credentials.isEmpty ? nil : pending
        return try await assertion(credential, rpID: pending.relyingParty, clientDataHash: pending.clientDataHash,
                                   userVerification: pending.userVerification, hmacSecret: pending.hmacSecret, discoverable: true, count: nil)
    }

    private func assertion(_ credential: FIDOCredentialInfo, rpID: String, clientDataHash: [UInt8], userVerification: Bool,
                           hmacSecret: (salts: [UInt8], shared: SecureBytes)?, discoverable: Bool, count: Int?) async throws(CTAP2.Status) -> CBOR {
        let signed = try await store.assert(credential, clientDataHash: clientDataHash, userVerification: userVerification, extensions: nil,
                                            hmacSecret: hmacSecret, reason: "sign in to \(SafeText.shown(rpID))")
        guard let signature = AuthenticatorData.derSignature(r: signed.signature.r, s: signed.signature.s) else { throw .other }
        var entries: [CBOR.Entry] = [
            .init(.int(1), Self.descriptor(credential)),
            .init(.int(2), .bytes(signed.authenticatorData)),
            .init(.int(3), .bytes(signature)),
        ]
        if discoverable {
            var user: [CBOR.Entry] = [.init(.text("id"), .bytes(credential.userID))]
            // Names only to a verified user (CTAP 2.1, 6.2.2).
            if signed.flags & AuthenticatorData.userVerified != 0 {
                if !credential.userName.isEmpty { user.append(.init(.text("name"), .text(credential.userName))) }
                if !credential.userDisplayName.isEmpty { user.append(.init(.text("displayName"), .text(credential.userDisplayName))) }
            }
            entries.append(.init(.int(4), .map(user)))
        }
        if let count { entries.append(.init(.int(5), .int(count))) }
        return .map(entries)
    }

    // MARK: - clientPIN, hmac-secret

    /// clientPIN, protocol 2: getKeyAgreement, and
    /// getPinUvAuthTokenUsingUvWithPermissions. This authenticator has no
    /// PIN (user verification is its own), so the PIN's subcommands are
    /// PIN_NOT_SET and any other INVALID_SUBCOMMAND.
    private func clientPIN(_ p: CBOR) async throws(CTAP2.Status) -> CBOR {
        guard let protocolValue = p[1], let subcommandValue = p[2] else { throw .missingParameter }
        guard let version = protocolValue.intValue, let subcommand = subcommandValue.intValue else { throw .cborUnexpectedType }
        guard version == PinUvAuthProtocolTwo.version else { throw .invalidParameter }
        switch subcommand {
        case 0x02: return .map([.init(.int(1), try agreement().coseKey)])
        case 0x06: return try await uvToken(p)
        case 0x01, 0x03, 0x04, 0x05, 0x09: throw .pinNotSet
        default: throw .invalidSubcommand
        }
    }

    /// getPinUvAuthTokenUsingUvWithPermissions: a new token (the last one
    /// given out no longer serves) for makeCredential, getAssertion and
    /// credential management. A token for credential management needs the
    /// finger (or the passcode) now; one for makeCredential and
    /// getAssertion alone does not, since each of those asks for its own
    /// touch and verification in the operation that signs (the flags it
    /// signs never come from the token).
    private func uvToken(_ p: CBOR) async throws(CTAP2.Status) -> CBOR {
        guard let platform = p[3], let permissionsValue = p[9] else { throw .missingParameter }
        guard let permissions = permissionsValue.intValue else { throw .cborUnexpectedType }
        guard permissions > 0 else { throw .invalidParameter }
        let offered = Self.makeCredentialPermission | Self.getAssertionPermission | Self.credentialManagementPermission
        guard permissions & ~offered == 0 else { throw .unauthorizedPermission }
        let relyingParty = try Self.text(p[10])
        if permissions & (Self.makeCredentialPermission | Self.getAssertionPermission) != 0, relyingParty == nil { throw .missingParameter }
        let shared = try agreement().sharedSecret(platform: platform)
        token = nil
        if permissions & Self.credentialManagementPermission != 0 {
            try await store.verifyUser(reason: "manage the passkeys kept by Touchstone")
        }
        var bytes = [UInt8](repeating: 0, count: 32)
        for i in bytes.indices { bytes[i] = UInt8.random(in: 0...255) }
        defer { secureWipe(&bytes) }
        token = Token(key: SecureBytes(copying: bytes), permissions: permissions, relyingParty: relyingParty, issued: clock())
        return .map([.init(.int(2), .bytes(try PinUvAuthProtocolTwo.encrypt(shared, bytes)))])
    }

    /// Whether a request's pinUvAuthParam (over `message`) is the token's,
    /// with `permission`, for `relyingParty`: true when it is, false with
    /// none; PIN_AUTH_INVALID when it is not. An empty one (a client
    /// asking to be touched first) is PIN_NOT_SET.
    private func verifyToken(_ param: CBOR?, _ version: CBOR?, _ message: [UInt8], permission: Int,
                             relyingParty: String?) throws(CTAP2.Status) -> Bool {
        guard let param else { return false }
        guard let tag = param.bytesValue else { throw .cborUnexpectedType }
        if tag.isEmpty { throw .pinNotSet }
        guard let version else { throw .missingParameter }
        guard version.intValue == PinUvAuthProtocolTwo.version else { throw .invalidParameter }
        guard let token, clock() - token.issued < Self.tokenLifetime, token.permissions & permission != 0,
              token.relyingParty == nil || relyingParty == nil || token.relyingParty == relyingParty,
              PinUvAuthProtocolTwo.verify(token.key, message, tag: tag, wholeKey: true) else { throw .pinAuthInvalid }
        return true
    }

    // MARK: - credentialManagement

    /// credentialManagement (CTAP 2.1, 6.8): metadata, the relying parties
    /// and their discoverable credentials enumerated, a credential deleted
    /// or its user's names changed (after what its signatures need); each
    /// first request with a token for credential management.
    private func credentialManagement(_ p: CBOR) async throws(CTAP2.Status) -> CBOR? {
        guard let subcommandValue = p[1] else { throw .missingParameter }
        guard let subcommand = subcommandValue.intValue else { throw .cborUnexpectedType }
        let parameters = p[2]
        if let parameters, parameters.mapValue == nil { throw .cborUnexpectedType }
        switch subcommand {
        case 0x03, 0x05:
            guard !enumeration.isEmpty else { throw .notAllowed }
            return enumeration.removeFirst()
        case 0x01, 0x02, 0x04, 0x06, 0x07:
            guard let param = p[4] else { throw .missingParameter }
            let message = [UInt8(subcommand)] + (parameters?.encoded() ?? [])
            _ = try verifyToken(param, p[3], message, permission: Self.credentialManagementPermission, relyingParty: nil)
        default:
            throw .invalidSubcommand
        }
        let all = try await store.allCredentials()
        let discoverable = all.filter { $0.discoverable && $0.state == .ok }
        switch subcommand {
        case 0x01:
            return .map([.init(.int(1), .int(discoverable.count)), .init(.int(2), .int(Self.remainingDiscoverable))])
        case 0x02:
            var parties: [String] = []
            for credential in discoverable where !parties.contains(credential.relyingParty) { parties.append(credential.relyingParty) }
            guard !parties.isEmpty else { throw .noCredentials }
            let answers = parties.map { party -> [CBOR.Entry] in
                [.init(.int(3), .map([.init(.text("id"), .text(party))])), .init(.int(4), .bytes(Self.sha256(Array(party.utf8))))]
            }
            enumeration = answers.dropFirst().map { .map($0) }
            return .map(answers[0] + [.init(.int(5), .int(parties.count))])
        case 0x04:
            guard let hash = parameters?[1] else { throw .missingParameter }
            guard let rpIDHash = hash.bytesValue else { throw .cborUnexpectedType }
            let answers = discoverable.filter { Self.sha256(Array($0.relyingParty.utf8)) == rpIDHash }.compactMap { credential -> [CBOR.Entry]? in
                guard let key = AuthenticatorData.coseKey(publicPoint: credential.publicPoint) else { return nil }
                var user: [CBOR.Entry] = [.init(.text("id"), .bytes(credential.userID))]
                if !credential.userName.isEmpty { user.append(.init(.text("name"), .text(credential.userName))) }
                if !credential.userDisplayName.isEmpty { user.append(.init(.text("displayName"), .text(credential.userDisplayName))) }
                return [.init(.int(6), .map(user)), .init(.int(7), Self.descriptor(credential)), .init(.int(8), key),
                        .init(.int(10), .int(Int(credential.credProtect)))]
            }
            guard let first = answers.first else { throw .noCredentials }
            enumeration = answers.dropFirst().map { .map($0) }
            return .map(first + [.init(.int(9), .int(answers.count))])
        case 0x06:
            guard let descriptor = parameters?[2] else { throw .missingParameter }
            guard let id = try Self.credentialIDs(.array([descriptor])).first else { throw .invalidParameter }
            guard let credential = all.first(where: { $0.id == id }) else { throw .noCredentials }
            try await store.delete(credential, reason: "delete the passkey for \(SafeText.shown(credential.relyingParty))")
            return nil
        default:
            // updateUserInformation: the user's name and display name (an
            // absent one removed); the user handle must be the credential's.
            guard let descriptor = parameters?[2], let user = parameters?[3] else { throw .missingParameter }
            guard let id = try Self.credentialIDs(.array([descriptor])).first else { throw .invalidParameter }
            guard user.mapValue != nil, let userID = user["id"]?.bytesValue else { throw .cborUnexpectedType }
            let name = try Self.text(user["name"]) ?? ""
            let displayName = try Self.text(user["displayName"]) ?? ""
            guard let credential = all.first(where: { $0.id == id }) else { throw .noCredentials }
            guard credential.userID == userID else { throw .invalidParameter }
            try await store.updateUser(credential, name: name, displayName: displayName,
                                       reason: "rename the passkey's user for \(SafeText.shown(credential.relyingParty)) to \(name.isEmpty ? "(none)" : SafeText.shown(name))")
            return nil
        }
    }

    private func agreement() throws(CTAP2.Status) -> PinUvAuthProtocolTwo.KeyAgreement {
        if let keyAgreement { return keyAgreement }
        let made = try PinUvAuthProtocolTwo.KeyAgreement()
        keyAgreement = made
        return made
    }

    /// getAssertion's hmac-secret input {1: platform key, 2: saltEnc,
    /// 3: saltAuth, 4: protocol}: the salts, once saltAuth proves the
    /// platform holds the shared secret.
    private func hmacSecretInput(_ value: CBOR?) throws(CTAP2.Status) -> (salts: [UInt8], shared: SecureBytes)? {
        guard let value else { return nil }
        guard value.mapValue != nil else { throw .cborUnexpectedType }
        guard let platform = value[1], let saltEnc = value[2]?.bytesValue, let saltAuth = value[3]?.bytesValue else { throw .missingParameter }
        guard (value[4]?.intValue ?? 1) == PinUvAuthProtocolTwo.version else { throw .invalidParameter }
        let shared = try agreement().sharedSecret(platform: platform)
        guard PinUvAuthProtocolTwo.verify(shared, saltEnc, tag: saltAuth) else { throw .pinAuthInvalid }
        let salts = try PinUvAuthProtocolTwo.decrypt(shared, saltEnc)
        guard salts.count == 32 || salts.count == 64 else { throw .invalidLength }
        return (salts, shared)
    }

    // MARK: - Parameters

    private static func descriptor(_ credential: FIDOCredentialInfo) -> CBOR {
        .map([.init(.text("id"), .bytes(credential.id)), .init(.text("type"), .text("public-key"))])
    }

    private static func clientDataHash(_ value: CBOR?) throws(CTAP2.Status) -> [UInt8] {
        guard let value else { throw .missingParameter }
        guard let bytes = value.bytesValue else { throw .cborUnexpectedType }
        guard bytes.count == 32 else { throw .invalidLength }
        return bytes
    }

    /// A text field that may be absent; present, it must be text.
    private static func text(_ value: CBOR?) throws(CTAP2.Status) -> String? {
        guard let value else { return nil }
        guard let text = value.textValue else { throw .cborUnexpectedType }
        return text
    }

    /// The options map: names to booleans.
    private static func options(_ value: CBOR?) throws(CTAP2.Status) -> [String: Bool] {
        guard let value else { return [:] }
        guard let entries = value.mapValue else { throw .cborUnexpectedType }
        var options: [String: Bool] = [:]
        for entry in entries {
            guard let name = entry.key.textValue, let flag = entry.value.boolValue else { throw .cborUnexpectedType }
            options[name] = flag
        }
        return options
    }

    /// Credential descriptors' ids, of type public-key (others ignored).
    private static func credentialIDs(_ value: CBOR) throws(CTAP2.Status) -> [[UInt8]] {
        guard let list = value.arrayValue else { throw .cborUnexpectedType }
        var ids: [[UInt8]] = []
        for entry in list {
            guard entry.mapValue != nil, let type = try text(entry["type"]), let id = entry["id"]?.bytesValue else { throw .cborUnexpectedType }
            if type == "public-key" { ids.append(id) }
        }
        return ids
    }

    private static func sha256(_ bytes: [UInt8]) -> [UInt8] { AuthenticatorData.sha256(bytes) }
}
