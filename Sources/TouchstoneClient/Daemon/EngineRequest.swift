import FoundationEssentials
import TouchstoneSecure

/// One operation across the engine seam: its name, its request (this
/// value), its response, its typed failure and its secret slots. The same
/// value goes to the in-process engine as it is, and to `touchstoned` as a
/// request frame (docs/daemon.md, "Protocol"): its `Codable` form is the
/// frame's control part, its `WireSecret` fields the frame's secrets.
///
/// Adding an operation is its request type (in `Calls`) and its handler
/// (`EngineOperation` in the Touchstone module), listed in the registry
/// (`EngineOperations.all`) that the daemon serves from.
package protocol EngineRequest: Codable, Sendable {
    associatedtype Response: Codable & Sendable
    associatedtype Failure: EngineFailure
    /// The operation's name on the wire and in the daemon's log (never an
    /// item's name or a secret).
    static var name: String { get }
    /// The operation as the daemon's log names it (several share one:
    /// every read of a secret is a "get").
    static var logName: String { get }
    /// The names of the fields that are secrets, in the order they travel
    /// (an array's elements as `name[]`). Secrets never enter the control
    /// part; the encoder refuses a secret field not named here.
    static var secretSlots: [String] { get }
    /// A grant this request presents (item reads and changes), if any.
    var grant: GrantReference? { get set }
    /// The reason shown to the person, for the daemon's log.
    var reason: String? { get }
    /// What the operation opens with a grant (an item's service and
    /// account, an ssh key's name), for the daemon's log; never a secret.
    var target: String? { get }
    /// What a successful response says the operation opened, where the
    /// request alone cannot (an item read by its reference: the item's
    /// service and account), for the daemon's log; nil: `target`.
    static func target(opened response: Response) -> String?
    /// For an operation that issues a grant: how long the client asks to
    /// use it again (its context's reuse window, seconds). The daemon
    /// bounds it (`GrantPolicy`).
    var grantReuse: Double? { get }
    /// Caps how long the operation waits for each touch, where it waits
    /// for any (the daemon's cap: its reader is every user's).
    mutating func capTouchTimeout(milliseconds: Int)
    /// What a response that carries a grant does with it: the engine that
    /// made it names it (the daemon: keeps it under an id; the daemon
    /// engine: marks it as its connection's).
    static func issue(_ response: inout Response, _ mark: (inout GrantReference) -> Void)
}

extension EngineRequest {
    package static var secretSlots: [String] { [] }
    package static var logName: String { name }
    package var grant: GrantReference? {
        get { nil }
        set {}
    }
    package var reason: String? { nil }
    package var target: String? { nil }
    package static func target(opened response: Response) -> String? { nil }
    package var grantReuse: Double? { nil }
    package mutating func capTouchTimeout(milliseconds: Int) {}
    package static func issue(_ response: inout Response, _ mark: (inout GrantReference) -> Void) {}
}

/// The public error types an operation throws: each can carry a daemon
/// failure and an authentication failure, and reads a device error as its
/// own (a failure before the operation ran, such as the vault not
/// opening).
package protocol EngineFailure: Error, Codable, Sendable {
    static func daemon(_ failure: DaemonFailure) -> Self
    init(_ authentication: AuthenticationError)
    init(_ device: DeviceError)
    /// What to tell the user, or nil for a cancel.
    var message: String? { get }
}

extension DeviceError: EngineFailure {
    package init(_ device: DeviceError) { self = device }
}

extension AuthenticationError: EngineFailure {
    package init(_ authentication: AuthenticationError) { self = authentication }

    package init(_ device: DeviceError) {
        switch device {
        case .authentication(let error): self = error
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .corrupted(let what): self = .corrupted(what)
        case .daemon(let failure): self = .daemon(failure)
        case .passcodeAlreadySet, .invalidPasscode, .fingerNotEnrolled, .enrolledOnAnotherReader, .simulator:
            self = .corrupted(device.message ?? "\(device)")
        }
    }
}

extension KeychainError: EngineFailure {
    package init(_ device: DeviceError) {
        switch device {
        case .authentication(let error): self = .authentication(error)
        case .tpm(let failure): self = .tpm(failure)
        case .storage(let failure): self = .storage(failure)
        case .corrupted(let what): self = .corrupted(what)
        case .daemon(let failure): self = .daemon(failure)
        case .passcodeAlreadySet, .invalidPasscode, .fingerNotEnrolled, .enrolledOnAnotherReader, .simulator:
            self = .corrupted(device.message ?? "\(device)")
        }
    }
}

/// What an engine proved in one authentication, as it presents it again:
/// for the in-process engine the vault's proof (it holds the passcode class
/// key when the passcode was checked, wiped with it).
package protocol EngineGrant: Sendable {
    /// Whether this grant opens what `access` asks.
    func satisfies(_ access: AccessControl) -> Bool
}

/// A grant as operations carry it: in process, the engine's own grant; on
/// the wire, the id the daemon keeps it under for the connection, with
/// what it proved.
package struct GrantReference: EngineGrant, Codable {
    /// The daemon's id for it on one connection.
    package var id: UInt64?
    package var passcode: Bool
    package var biometricMatch: Bool
    /// The engine's own grant (never encoded).
    package var grant: (any EngineGrant)?
    /// Which engine and connection issued it, as that engine marks it
    /// (never encoded).
    package var issuer: Issuer?

    package struct Issuer: Sendable, Hashable {
        package var engine: ObjectIdentifier
        package var connection: Int
        package init(engine: ObjectIdentifier, connection: Int) {
            self.engine = engine
            self.connection = connection
        }
    }

    /// A reference by id alone, as a client sends it (a test's).
    package init(id: UInt64) {
        self.id = id
        passcode = false
        biometricMatch = false
    }

    package init(_ grant: any EngineGrant, passcode: Bool, biometricMatch: Bool) {
        self.grant = grant
        self.passcode = passcode
        self.biometricMatch = biometricMatch
    }

    /// A grant presented again: the reference itself when it is one.
    package init(presenting grant: any EngineGrant) {
        if let reference = grant as? GrantReference {
            self = reference
        } else {
            self.init(grant, passcode: grant.satisfies(.devicePasscode), biometricMatch: grant.satisfies(.biometryAny))
        }
    }

    package func satisfies(_ access: AccessControl) -> Bool {
        if let grant { return grant.satisfies(access) }
        return access.alternatives.contains { alternative in
            alternative.allSatisfy { flag in flag == .devicePasscode ? passcode : biometricMatch }
        }
    }

    private enum CodingKeys: String, CodingKey { case id, passcode, biometricMatch }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(UInt64.self, forKey: .id)
        passcode = try container.decode(Bool.self, forKey: .passcode)
        biometricMatch = try container.decode(Bool.self, forKey: .biometricMatch)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encode(passcode, forKey: .passcode)
        try container.encode(biometricMatch, forKey: .biometricMatch)
    }
}

/// A secret field of a request or a response: in process, the bytes; on
/// the wire, the index of its place in the frame's secrets part (the
/// control part holds only the index). Each place is taken once.
package struct WireSecret: Codable, Sendable {
    package let bytes: SecureBytes

    package init(_ bytes: SecureBytes) { self.bytes = bytes }

    package func encode(to encoder: any Encoder) throws {
        guard let sink = encoder.userInfo[WireSecrets.key] as? WireSecrets.Sink else {
            throw EncodingError.invalidValue(0, .init(codingPath: encoder.codingPath, debugDescription: "a secret outside a frame"))
        }
        var container = encoder.singleValueContainer()
        try container.encode(sink.append(bytes, at: encoder.codingPath))
    }

    package init(from decoder: any Decoder) throws {
        guard let source = decoder.userInfo[WireSecrets.key] as? WireSecrets.Source else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a secret outside a frame"))
        }
        let index = try decoder.singleValueContainer().decode(Int.self)
        guard let bytes = source.take(index) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "secret \(index) is not in the frame or is named twice"))
        }
        self.bytes = bytes
    }
}

/// Where `WireSecret`s go while a frame is encoded, and come from while it
/// is decoded (one frame, one thread).
package enum WireSecrets {
    static let key = CodingUserInfoKey(rawValue: "touchstone.secrets")!

    /// The slot name of a coding path: the last named key, `[]` after it
    /// for an array's element.
    static func slot(_ path: [any CodingKey]) -> String {
        guard let last = path.last else { return "" }
        if last.intValue != nil, path.count >= 2 { return path[path.count - 2].stringValue + "[]" }
        return last.stringValue
    }

    final class Sink: @unchecked Sendable {
        // @unchecked: used by one encode on one thread.
        private(set) var secrets: [SecureBytes]
        /// The slot of each secret appended (after the leading ones).
        private(set) var paths: [String] = []

        init(_ leading: [SecureBytes]) { secrets = leading }

        func append(_ bytes: SecureBytes, at path: [any CodingKey]) -> Int {
            secrets.append(bytes)
            paths.append(slot(path))
            return secrets.count - 1
        }
    }

    final class Source: @unchecked Sendable {
        // @unchecked: used by one decode on one thread.
        private let secrets: [SecureBytes]
        private var taken: Set<Int> = []

        init(_ secrets: [SecureBytes]) { self.secrets = secrets }

        func take(_ index: Int) -> SecureBytes? {
            guard secrets.indices.contains(index), taken.insert(index).inserted else { return nil }
            return secrets[index]
        }

        var allTaken: Bool { taken.count == secrets.count }
    }
}

/// A change to an optional field: `value` nil clears it.
package struct FieldChange<T: Codable & Sendable & Hashable>: Codable, Sendable, Hashable {
    package var value: T?
    package init(_ value: T?) { self.value = value }
}

/// An operation that answers nothing but success.
package struct Done: Codable, Sendable, Hashable {
    package init() {}
}
