import FoundationEssentials
import TouchstoneSecure

/// Every operation across the engine seam, one type each (`EngineRequest`).
/// The daemon serves them by `name`; docs/daemon.md lists them, checked
/// against these types by `DaemonProtocolDocTests`.
package enum Calls {}

// MARK: - The device: passcode and fingers

extension Calls {
    /// What the device has now, without prompting. Never fails: what could
    /// not be read is in the status.
    package struct Status: EngineRequest {
        package typealias Response = DaemonStatus
        package typealias Failure = DeviceError
        package static let name = "status"
        package init() {}
    }

    package struct PasscodeIsSet: EngineRequest {
        package typealias Response = Bool
        package typealias Failure = DeviceError
        package static let name = "passcode-is-set"
        package init() {}
    }

    package struct SetPasscode: EngineRequest {
        package typealias Response = Done
        package typealias Failure = DeviceError
        package static let name = "passcode-set"
        package static let secretSlots = ["passcode"]
        package var passcode: WireSecret
        package init(passcode: SecureBytes) { self.passcode = WireSecret(passcode) }
    }

    package struct ChangePasscode: EngineRequest {
        package typealias Response = Done
        package typealias Failure = DeviceError
        package static let name = "passcode-change"
        package static let secretSlots = ["old", "new"]
        package var old: WireSecret
        package var new: WireSecret
        package init(from old: SecureBytes, to new: SecureBytes) {
            self.old = WireSecret(old)
            self.new = WireSecret(new)
        }
    }

    /// Answers how many items went with the passcode.
    package struct RemovePasscode: EngineRequest {
        package typealias Response = Int
        package typealias Failure = DeviceError
        package static let name = "passcode-remove"
        package static let secretSlots = ["passcode"]
        package var passcode: WireSecret
        package init(passcode: SecureBytes) { self.passcode = WireSecret(passcode) }
    }

    package struct EnrolledFingers: EngineRequest {
        package typealias Response = [Finger]
        package typealias Failure = DeviceError
        package static let name = "fingers"
        package init() {}
    }

    /// Scan events come back through the interaction (event frames).
    package struct Enroll: EngineRequest {
        package typealias Response = Done
        package typealias Failure = DeviceError
        package static let name = "enroll"
        package mutating func capTouchTimeout(milliseconds: Int) { timeoutMilliseconds = min(timeoutMilliseconds, milliseconds) }
        package static let secretSlots = ["passcode"]
        package var finger: Finger
        package var timeoutMilliseconds: Int
        package var passcode: WireSecret
        package init(_ finger: Finger, passcode: SecureBytes, timeout: Duration) {
            self.finger = finger
            timeoutMilliseconds = timeout.wholeMilliseconds
            self.passcode = WireSecret(passcode)
        }
    }

    /// How many matching touches of one finger a biometric authentication
    /// takes from now on (`touchstone matching --touches N`).
    package struct SetMatchingTouches: EngineRequest {
        package typealias Response = Done
        package typealias Failure = DeviceError
        package static let name = "matching-touches-set"
        package static let secretSlots = ["passcode"]
        package var touches: MatchingTouches
        package var passcode: WireSecret
        package init(_ touches: MatchingTouches, passcode: SecureBytes) {
            self.touches = touches
            self.passcode = WireSecret(passcode)
        }
    }

    /// `finger` nil: every finger.
    package struct Unenroll: EngineRequest {
        package typealias Response = Done
        package typealias Failure = DeviceError
        package static let name = "unenroll"
        package static let secretSlots = ["passcode"]
        package var finger: Finger?
        package var passcode: WireSecret
        package init(_ finger: Finger?, passcode: SecureBytes) {
            self.finger = finger
            self.passcode = WireSecret(passcode)
        }
    }

    /// An import's enrolled set (`touchstone import`): the prints of
    /// `fingers`, in that order, enrolled on the reader named.
    package struct ImportFingers: EngineRequest {
        package typealias Response = Done
        package typealias Failure = DeviceError
        package static let name = "import-fingers"
        package static let secretSlots = ["passcode", "prints[]"]
        package var driver: String
        package var deviceID: String
        package var fingers: [Finger]
        package var passcode: WireSecret
        package var prints: [WireSecret]
        package init(driver: String, deviceID: String, fingers: [Finger], prints: [SecureBytes], passcode: SecureBytes) {
            precondition(Self.isWellFormed(fingers: fingers, prints: prints.count), "an import of \(fingers.count) fingers, \(prints.count) prints")
            self.driver = driver
            self.deviceID = deviceID
            self.fingers = fingers
            self.prints = prints.map(WireSecret.init)
            self.passcode = WireSecret(passcode)
        }

        /// At most ten fingers, each once, each with its print.
        package static func isWellFormed(fingers: [Finger], prints: Int) -> Bool {
            fingers.count <= 10 && Set(fingers).count == fingers.count && prints == fingers.count
        }

        private enum CodingKeys: String, CodingKey { case driver, deviceID, fingers, passcode, prints }

        /// A request that is not well formed is refused as it arrives.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            driver = try container.decode(String.self, forKey: .driver)
            deviceID = try container.decode(String.self, forKey: .deviceID)
            fingers = try container.decode([Finger].self, forKey: .fingers)
            passcode = try container.decode(WireSecret.self, forKey: .passcode)
            prints = try container.decode([WireSecret].self, forKey: .prints)
            guard Self.isWellFormed(fingers: fingers, prints: prints.count) else {
                throw DecodingError.dataCorruptedError(forKey: .fingers, in: container,
                                                       debugDescription: "an import carries at most ten fingers, each once, each with its print")
            }
        }
    }
}

// MARK: - Authentication

extension Calls {
    /// Never fails: an unavailable policy says why.
    package struct Availability: EngineRequest {
        package typealias Response = TouchstoneModel.Availability
        package typealias Failure = AuthenticationError
        package static let name = "availability"
        package var policy: AuthenticationPolicy
        package init(_ policy: AuthenticationPolicy) { self.policy = policy }
    }

    /// The enrolled-finger set's opaque state; nil without a passcode.
    package struct DomainState: EngineRequest {
        package typealias Response = Data?
        package typealias Failure = AuthenticationError
        package static let name = "domain-state"
        package init() {}
    }

    /// Authenticates for `access` (a touch, the passcode, or both, as it
    /// asks) through the caller's interaction; answers a grant.
    package struct Authenticate: EngineRequest {
        package typealias Response = GrantReference
        package typealias Failure = AuthenticationError
        package static let name = "authenticate"
        package mutating func capTouchTimeout(milliseconds: Int) { touchTimeoutMilliseconds = min(touchTimeoutMilliseconds, milliseconds) }
        package var access: AccessControl
        package var reasonText: String
        package var interactionNotAllowed: Bool
        package var touchTimeoutMilliseconds: Int
        /// How long the grant is to be used again (the context's reuse
        /// window, seconds; 0: for the one operation that asked).
        package var reuseSeconds: Double
        package var reason: String? { reasonText }
        package var grantReuse: Double? { reuseSeconds }

        package init(_ access: AccessControl, reason: String, interactionNotAllowed: Bool, touchTimeout: Duration,
                     reuse: Double = 0) {
            self.access = access
            reasonText = reason
            self.interactionNotAllowed = interactionNotAllowed
            touchTimeoutMilliseconds = touchTimeout.wholeMilliseconds
            reuseSeconds = reuse
        }

        package static func issue(_ response: inout GrantReference, _ mark: (inout GrantReference) -> Void) { mark(&response) }
    }
}

// MARK: - Items by service and account

extension Calls {
    package struct Add: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "add"
        package static let secretSlots = ["secret"]
        package var attributes: ItemAttributes
        package var secret: WireSecret
        package init(_ secret: SecureBytes, attributes: ItemAttributes) {
            self.attributes = attributes
            self.secret = WireSecret(secret)
        }
    }

    /// The item's ways in that are still open, as an access control
    /// (`itemInvalidated` when none is).
    package struct OpenAccess: EngineRequest {
        package typealias Response = AccessControl
        package typealias Failure = KeychainError
        package static let name = "open-access"
        package var service: String
        package var account: String
        package init(service: String, account: String) {
            self.service = service
            self.account = account
        }
    }

    package struct Secret: EngineRequest {
        package typealias Response = WireSecret
        package typealias Failure = KeychainError
        package static let name = "get"
        package var target: String? { "\(service) / \(account)" }
        package var service: String
        package var account: String
        package var grant: GrantReference?
        package init(service: String, account: String, grant: (any EngineGrant)?) {
            self.service = service
            self.account = account
            self.grant = grant.map(GrantReference.init(presenting:))
        }
    }

    /// `touchstone get` in one call: the item's access, an authentication
    /// for it when it has one (through the caller's interaction, `reason`
    /// shown, touches waited for at most the timeout), then its secret.
    /// Every failure is the keychain's, as the three calls' failures read.
    package struct GetSecret: EngineRequest {
        package typealias Response = WireSecret
        package typealias Failure = KeychainError
        package static let name = "get-secret"
        package mutating func capTouchTimeout(milliseconds: Int) { touchTimeoutMilliseconds = min(touchTimeoutMilliseconds, milliseconds) }
        package var target: String? { "\(service) / \(account)" }
        package static let logName = "get"
        package var service: String
        package var account: String
        package var reasonText: String
        package var touchTimeoutMilliseconds: Int
        package var reason: String? { reasonText }
        package init(service: String, account: String, reason: String, touchTimeout: Duration) {
            self.service = service
            self.account = account
            reasonText = reason
            touchTimeoutMilliseconds = touchTimeout.wholeMilliseconds
        }
    }

    /// The new secret when `secret` is given; each other field changes when
    /// given (its value nil clears it).
    package struct Update: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "update"
        package var target: String? { "\(service) / \(account)" }
        package static let secretSlots = ["secret"]
        package var service: String
        package var account: String
        package var secret: WireSecret?
        package var label: FieldChange<String>?
        package var comment: FieldChange<String>?
        package var generic: FieldChange<Data>?
        package var grant: GrantReference?
        package init(service: String, account: String, secret: SecureBytes?, label: String??, comment: String??,
                     generic: Data??, grant: (any EngineGrant)?) {
            self.service = service
            self.account = account
            self.secret = secret.map(WireSecret.init)
            self.label = label.map { FieldChange($0) }
            self.comment = comment.map { FieldChange($0) }
            self.generic = generic.map { FieldChange($0) }
            self.grant = grant.map(GrantReference.init(presenting:))
        }
    }

    package struct Delete: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "delete"
        package var service: String
        package var account: String
        package init(service: String, account: String) {
            self.service = service
            self.account = account
        }
    }

    /// The items, of one service or (nil) all.
    package struct Items: EngineRequest {
        package typealias Response = [ListedItem]
        package typealias Failure = KeychainError
        package static let name = "list"
        package var service: String?
        package init(service: String?) { self.service = service }
    }

    package struct Attributes: EngineRequest {
        package typealias Response = ItemAttributes
        package typealias Failure = KeychainError
        package static let name = "attributes"
        package var service: String
        package var account: String
        package init(service: String, account: String) {
            self.service = service
            self.account = account
        }
    }
}

// MARK: - Items by reference (the Secret Service)

extension Calls {
    /// Items whose attribute set holds every pair of `query` (empty: all).
    package struct Search: EngineRequest {
        package typealias Response = [ReferencedItem]
        package typealias Failure = KeychainError
        package static let name = "search"
        package var query: [String: String]
        package init(_ query: [String: String]) { self.query = query }
    }

    /// Adds beside equal items, or (`replace`) in their place.
    package struct AddItem: EngineRequest {
        package struct Added: Codable, Sendable {
            package var reference: ItemReference
            package var replaced: [ItemReference]
            package init(reference: ItemReference, replaced: [ItemReference]) {
                self.reference = reference
                self.replaced = replaced
            }
        }
        package typealias Response = Added
        package typealias Failure = KeychainError
        package static let name = "add-item"
        package static let logName = "add"
        package static let secretSlots = ["secret"]
        package var attributes: ItemAttributes
        package var replace: Bool
        package var secret: WireSecret
        package init(_ secret: SecureBytes, attributes: ItemAttributes, replace: Bool) {
            self.attributes = attributes
            self.replace = replace
            self.secret = WireSecret(secret)
        }
    }

    package struct Item: EngineRequest {
        package typealias Response = ReferencedItem
        package typealias Failure = KeychainError
        package static let name = "item"
        package var reference: ItemReference
        package init(_ reference: ItemReference) { self.reference = reference }
    }

    package struct OpenItemAccess: EngineRequest {
        package typealias Response = AccessControl
        package typealias Failure = KeychainError
        package static let name = "open-item-access"
        package static let logName = "open-access"
        package var reference: ItemReference
        package init(_ reference: ItemReference) { self.reference = reference }
    }

    /// The item's secret and its attributes.
    package struct ItemSecret: EngineRequest {
        package struct Opened: Codable, Sendable {
            package var secret: WireSecret
            package var attributes: ItemAttributes
            package init(secret: SecureBytes, attributes: ItemAttributes) {
                self.secret = WireSecret(secret)
                self.attributes = attributes
            }
        }
        package typealias Response = Opened
        package typealias Failure = KeychainError
        package static let name = "item-secret"
        package var target: String? { "\(reference)" }
        package static func target(opened response: Opened) -> String? {
            "\(response.attributes.service) / \(response.attributes.account)"
        }
        package static let logName = "get"
        package var reference: ItemReference
        package var grant: GrantReference?
        package init(_ reference: ItemReference, grant: (any EngineGrant)?) {
            self.reference = reference
            self.grant = grant.map(GrantReference.init(presenting:))
        }
    }

    package struct UpdateItem: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "update-item"
        package var target: String? { "\(reference)" }
        package static let logName = "update"
        package static let secretSlots = ["secret"]
        package var reference: ItemReference
        package var secret: WireSecret?
        package var label: FieldChange<String>?
        package var searchAttributes: [String: String]?
        package var contentType: FieldChange<String>?
        package var grant: GrantReference?
        package init(_ reference: ItemReference, secret: SecureBytes?, label: String??, searchAttributes: [String: String]?,
                     contentType: String??, grant: (any EngineGrant)?) {
            self.reference = reference
            self.secret = secret.map(WireSecret.init)
            self.label = label.map { FieldChange($0) }
            self.searchAttributes = searchAttributes
            self.contentType = contentType.map { FieldChange($0) }
            self.grant = grant.map(GrantReference.init(presenting:))
        }
    }

    package struct DeleteItem: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "delete-item"
        package static let logName = "delete"
        package var reference: ItemReference
        package init(_ reference: ItemReference) { self.reference = reference }
    }
}

// MARK: - ssh keys (docs/ssh.md): nothing of a private key crosses the seam

extension Calls {
    package struct CreateSSHKey: EngineRequest {
        package typealias Response = SSHKeyInfo
        package typealias Failure = KeychainError
        package static let name = "ssh-key-create"
        package var name: String
        package var comment: String
        package var access: AccessControl
        package init(name: String, comment: String, access: AccessControl) {
            self.name = name
            self.comment = comment
            self.access = access
        }
    }

    package struct SSHKeys: EngineRequest {
        package typealias Response = [SSHKeyInfo]
        package typealias Failure = KeychainError
        package static let name = "ssh-key-list"
        package init() {}
    }

    package struct DeleteSSHKey: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "ssh-key-delete"
        package var name: String
        package init(name: String) { self.name = name }
    }

    /// The key's ways to sign that are still open (`itemInvalidated` when
    /// none is).
    package struct SSHKeyOpenAccess: EngineRequest {
        package typealias Response = AccessControl
        package typealias Failure = KeychainError
        package static let name = "ssh-key-open-access"
        package var name: String
        package init(name: String) { self.name = name }
    }

    /// The TPM's ECDSA signature of the SHA-256 `digest` with the key.
    package struct SignSSH: EngineRequest {
        package typealias Response = SSHSignature
        package typealias Failure = KeychainError
        package static let name = "ssh-sign"
        package var target: String? { "ssh key \(name)" }
        package var name: String
        package var digest: [UInt8]
        package var grant: GrantReference?
        package init(name: String, digest: [UInt8], grant: (any EngineGrant)?) {
            self.name = name
            self.digest = digest
            self.grant = grant.map(GrantReference.init(presenting:))
        }
    }
}

// MARK: - FIDO credentials (docs/fido.md): nothing of a private key crosses the seam

extension Calls {
    /// A new credential in the TPM; a discoverable one for a relying party
    /// and user that have one replaces it only with `replace`.
    package struct CreateFIDOCredential: EngineRequest {
        package typealias Response = FIDOCredentialInfo
        package typealias Failure = KeychainError
        package static let name = "fido-create"
        package var request: FIDOCredentialRequest
        package var replace: Bool
        package init(_ request: FIDOCredentialRequest, replace: Bool) {
            self.request = request
            self.replace = replace
        }
    }

    /// The credentials (of one relying party, when named), with their state.
    package struct FIDOCredentials: EngineRequest {
        package typealias Response = [FIDOCredentialInfo]
        package typealias Failure = KeychainError
        package static let name = "fido-list"
        package var relyingParty: String?
        package init(relyingParty: String?) { self.relyingParty = relyingParty }
    }

    /// Deletes a credential: the passcode, checked by the engine.
    package struct DeleteFIDOCredential: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "fido-delete"
        package static let secretSlots = ["passcode"]
        package var id: [UInt8]
        package var passcode: WireSecret
        package init(id: [UInt8], passcode: SecureBytes) {
            self.id = id
            self.passcode = WireSecret(passcode)
        }
    }

    /// Deletes a credential after what its signatures need (a touch, or
    /// the passcode where its access allows one), asked in this operation:
    /// credential management through the authenticator.
    package struct DeleteFIDOCredentialByTouch: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "fido-delete-touch"
        package mutating func capTouchTimeout(milliseconds: Int) { touchTimeoutMilliseconds = min(touchTimeoutMilliseconds, milliseconds) }
        package var target: String? { "FIDO credential \(FIDOCredentialInfo.base64url(id).prefix(8))" }
        package var id: [UInt8]
        package var relyingParty: String
        package var reasonText: String
        package var interactionNotAllowed: Bool
        package var touchTimeoutMilliseconds: Int
        package var reason: String? { reasonText }

        package init(id: [UInt8], relyingParty: String, reason: String, interactionNotAllowed: Bool, touchTimeout: Duration) {
            self.id = id
            self.relyingParty = relyingParty
            reasonText = reason
            self.interactionNotAllowed = interactionNotAllowed
            touchTimeoutMilliseconds = touchTimeout.wholeMilliseconds
        }
    }

    /// A FIDO credential's user name and display name changed, after what
    /// its signatures need, asked in this operation: credential management's
    /// updateUserInformation through the authenticator.
    package struct UpdateFIDOUser: EngineRequest {
        package typealias Response = Done
        package typealias Failure = KeychainError
        package static let name = "fido-update-user"
        package mutating func capTouchTimeout(milliseconds: Int) { touchTimeoutMilliseconds = min(touchTimeoutMilliseconds, milliseconds) }
        package var target: String? { "FIDO credential \(FIDOCredentialInfo.base64url(id).prefix(8))" }
        package var id: [UInt8]
        package var relyingParty: String
        package var userName: String
        package var userDisplayName: String
        package var reasonText: String
        package var interactionNotAllowed: Bool
        package var touchTimeoutMilliseconds: Int
        package var reason: String? { reasonText }

        package init(id: [UInt8], relyingParty: String, userName: String, userDisplayName: String, reason: String,
                     interactionNotAllowed: Bool, touchTimeout: Duration) {
            self.id = id
            self.relyingParty = relyingParty
            self.userName = userName
            self.userDisplayName = userDisplayName
            reasonText = reason
            self.interactionNotAllowed = interactionNotAllowed
            touchTimeoutMilliseconds = touchTimeout.wholeMilliseconds
        }
    }

    /// The authenticator's reset: every FIDO credential but OpenSSH's
    /// (`ssh:` applications) deleted, after the passcode asked in this
    /// operation; how many were deleted.
    package struct ResetFIDO: EngineRequest {
        package typealias Response = Int
        package typealias Failure = KeychainError
        package static let name = "fido-reset"
        package mutating func capTouchTimeout(milliseconds: Int) { touchTimeoutMilliseconds = min(touchTimeoutMilliseconds, milliseconds) }
        package var reasonText: String
        package var interactionNotAllowed: Bool
        package var touchTimeoutMilliseconds: Int
        package var reason: String? { reasonText }

        package init(reason: String, interactionNotAllowed: Bool, touchTimeout: Duration) {
            reasonText = reason
            self.interactionNotAllowed = interactionNotAllowed
            touchTimeoutMilliseconds = touchTimeout.wholeMilliseconds
        }
    }

    /// An assertion: the engine asks for the touch (and the verification)
    /// itself, in this one operation, so that the flags it signs say what
    /// happened for this signature and never come from a grant.
    package struct AssertFIDO: EngineRequest {
        package typealias Response = FIDOAssertion
        package typealias Failure = KeychainError
        package static let name = "fido-assert"
        package static let secretSlots = ["hmacSharedSecret"]
        package mutating func capTouchTimeout(milliseconds: Int) { touchTimeoutMilliseconds = min(touchTimeoutMilliseconds, milliseconds) }
        package var target: String? { "FIDO credential \(FIDOCredentialInfo.base64url(id).prefix(8))" }
        package var id: [UInt8]
        /// The relying party (or ssh application) asking: the credential's own, or no assertion.
        package var relyingParty: String
        package var clientDataHash: [UInt8]
        package var userVerification: Bool
        /// The authenticator's extension outputs (a CBOR map), signed in
        /// the authenticator data; none for ssh.
        package var extensions: [UInt8]?
        /// hmac-secret's salts (32 or 64 bytes) and the PIN/UV protocol's
        /// shared secret with the platform, which encrypts its outputs.
        package var hmacSalts: [UInt8]?
        package var hmacSharedSecret: WireSecret?
        package var reasonText: String
        package var interactionNotAllowed: Bool
        package var touchTimeoutMilliseconds: Int
        package var reason: String? { reasonText }

        package init(id: [UInt8], relyingParty: String, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]? = nil,
                     hmacSecret: (salts: [UInt8], shared: SecureBytes)? = nil,
                     reason: String, interactionNotAllowed: Bool, touchTimeout: Duration) {
            self.id = id
            self.relyingParty = relyingParty
            self.clientDataHash = clientDataHash
            self.userVerification = userVerification
            self.extensions = extensions
            hmacSalts = hmacSecret?.salts
            hmacSharedSecret = hmacSecret.map { WireSecret($0.shared) }
            reasonText = reason
            self.interactionNotAllowed = interactionNotAllowed
            touchTimeoutMilliseconds = touchTimeout.wholeMilliseconds
        }
    }

    /// A WebAuthn registration in one operation: the credential made, the
    /// touch (and the verification) its access asks, and its attestation
    /// signed; a credential whose touch fails is not kept, and a
    /// discoverable one replaces the relying party's and user's others
    /// only once attested.
    package struct MakeFIDOCredential: EngineRequest {
        package typealias Response = FIDOMadeCredential
        package typealias Failure = KeychainError
        package static let name = "fido-make"
        package mutating func capTouchTimeout(milliseconds: Int) { touchTimeoutMilliseconds = min(touchTimeoutMilliseconds, milliseconds) }
        package var target: String? { "a new FIDO credential for \(request.relyingParty)" }
        package var request: FIDOCredentialRequest
        package var clientDataHash: [UInt8]
        package var userVerification: Bool
        package var extensions: [UInt8]?
        package var reasonText: String
        package var interactionNotAllowed: Bool
        package var touchTimeoutMilliseconds: Int
        package var reason: String? { reasonText }

        package init(_ request: FIDOCredentialRequest, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]?, reason: String,
                     interactionNotAllowed: Bool, touchTimeout: Duration) {
            self.request = request
            self.clientDataHash = clientDataHash
            self.userVerification = userVerification
            self.extensions = extensions
            reasonText = reason
            self.interactionNotAllowed = interactionNotAllowed
            touchTimeoutMilliseconds = touchTimeout.wholeMilliseconds
        }
    }
}
