import FoundationEssentials

/// A FIDO credential as `fido list` shows it (docs/fido.md): who it is
/// for, its public key, its counter; never anything of the private key,
/// which the TPM made and keeps.
public struct FIDOCredentialInfo: Sendable, Hashable, Codable {
    /// The credential id (random; what a relying party, or an ssh key
    /// file's key handle, presents to name it). Names a credential of this
    /// vault only: it carries no key material.
    public var id: [UInt8]
    /// The relying party's id (a domain), or the ssh application (`ssh:`…).
    public var relyingParty: String
    /// The relying party's user handle (any bytes, at most 64).
    public var userID: [UInt8]
    public var userName: String
    public var userDisplayName: String
    /// A discoverable (resident) credential: found without its id
    /// (`ssh-keygen -K`, a sign-in with no allow list).
    public var discoverable: Bool
    /// Made to sign only after user verification (ssh's
    /// `verify-required`): every signature asks for it.
    public var verificationRequired: Bool
    /// CTAP 2.1 credProtect: 1 (optional), 2 (optional with the id
    /// list), 3 (required).
    public var credProtect: UInt8
    public var access: AccessControl
    /// Made with the hmac-secret extension (WebAuthn's PRF): nil in
    /// records made before it existed, as false.
    public var hmacSecret: Bool?
    public var created: Date
    /// The uncompressed P-256 point: 0x04, X, Y (65 bytes); empty for a
    /// corrupted record.
    public var publicPoint: [UInt8]
    /// The last signature counter released (0: none yet).
    public var signCount: UInt32
    /// `ok`, `invalidated` (every way to sign is closed: a
    /// biometry-current-set credential after an enrolment change), or
    /// `corrupted`.
    public var state: ListedItem.State

    public init(id: [UInt8], relyingParty: String, userID: [UInt8], userName: String, userDisplayName: String = "",
                discoverable: Bool, verificationRequired: Bool, credProtect: UInt8 = 1, access: AccessControl,
                created: Date, publicPoint: [UInt8], signCount: UInt32 = 0, state: ListedItem.State = .ok) {
        self.id = id
        self.relyingParty = relyingParty
        self.userID = userID
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.discoverable = discoverable
        self.verificationRequired = verificationRequired
        self.credProtect = credProtect
        self.access = access
        self.created = created
        self.publicPoint = publicPoint
        self.signCount = signCount
        self.state = state
    }

    /// The id as `fido list` prints it: base64url without padding.
    public var idText: String { Self.base64url(id) }

    /// `bytes` in base64url without padding (RFC 4648 section 5).
    public static func base64url(_ bytes: [UInt8]) -> String {
        String(Data(bytes).base64EncodedString().compactMap { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 == "=" ? nil : $0 })
    }
}

/// What a new credential asks for (`FIDOCredentials.create`).
public struct FIDOCredentialRequest: Sendable, Hashable, Codable {
    public var relyingParty: String
    public var userID: [UInt8]
    public var userName: String
    public var userDisplayName: String
    public var discoverable: Bool
    public var verificationRequired: Bool
    public var credProtect: UInt8
    public var access: AccessControl
    /// With the hmac-secret extension (WebAuthn's PRF): assertions may
    /// carry its outputs.
    public var hmacSecret: Bool

    public init(relyingParty: String, userID: [UInt8] = [], userName: String = "", userDisplayName: String = "",
                discoverable: Bool = false, verificationRequired: Bool = false, credProtect: UInt8 = 1,
                access: AccessControl = .userPresence, hmacSecret: Bool = false) {
        self.hmacSecret = hmacSecret
        self.relyingParty = relyingParty
        self.userID = userID
        self.userName = userName
        self.userDisplayName = userDisplayName
        self.discoverable = discoverable
        self.verificationRequired = verificationRequired
        self.credProtect = credProtect
        self.access = access
    }
}

extension FIDOCredentialRequest {
    private enum CodingKeys: String, CodingKey {
        case relyingParty, userID, userName, userDisplayName, discoverable, verificationRequired, credProtect, access, hmacSecret
    }

    /// A request without `hmacSecret` (an older client's) asks for none.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        relyingParty = try container.decode(String.self, forKey: .relyingParty)
        userID = try container.decode([UInt8].self, forKey: .userID)
        userName = try container.decode(String.self, forKey: .userName)
        userDisplayName = try container.decode(String.self, forKey: .userDisplayName)
        discoverable = try container.decode(Bool.self, forKey: .discoverable)
        verificationRequired = try container.decode(Bool.self, forKey: .verificationRequired)
        credProtect = try container.decode(UInt8.self, forKey: .credProtect)
        access = try container.decode(AccessControl.self, forKey: .access)
        hmacSecret = try container.decodeIfPresent(Bool.self, forKey: .hmacSecret) ?? false
    }
}

/// A FIDO assertion: the authenticator data signed, and the TPM's ECDSA
/// P-256 signature of SHA-256(authenticatorData || clientDataHash).
public struct FIDOAssertion: Sendable, Hashable, Codable {
    /// rpIdHash (32) || flags (1) || signCount (4, big-endian).
    public let authenticatorData: [UInt8]
    public let signature: SSHSignature

    public init(authenticatorData: [UInt8], signature: SSHSignature) {
        self.authenticatorData = authenticatorData
        self.signature = signature
    }

    /// The flags byte: user present 0x01, user verified 0x04.
    public var flags: UInt8 { authenticatorData.count > 32 ? authenticatorData[32] : 0 }
    /// The signature counter the assertion carries.
    public var signCount: UInt32 {
        guard authenticatorData.count >= 37 else { return 0 }
        return authenticatorData[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
    }

    public static let userPresent: UInt8 = 0x01
    public static let userVerified: UInt8 = 0x04
}

/// A new credential and its attestation: the first assertion, whose
/// authenticator data carries the credential (AAGUID, id, public key),
/// signed by the credential's own key after the touch (WebAuthn's
/// self attestation).
public struct FIDOMadeCredential: Sendable, Hashable, Codable {
    public let credential: FIDOCredentialInfo
    public let attestation: FIDOAssertion

    public init(credential: FIDOCredentialInfo, attestation: FIDOAssertion) {
        self.credential = credential
        self.attestation = attestation
    }
}
