/// What a device has now, part by part, found without prompting. Every
/// part the contract names is always present in its JSON (null when it
/// cannot be known, for example the item count when the TPM is unreachable).
public struct Status: Sendable, Hashable, Encodable {
    public struct Reader: Sendable, Hashable, Codable {
        public var available: Bool
        /// `auto`, `sim`, or the id asked for.
        public var selection: String
        /// The reader's id ("driver/device"), as `ReaderSelection.id` takes it.
        public var id: String?
        public var name: String?
        /// Why it is not available.
        public var reason: String?

        package init(available: Bool, selection: String, id: String? = nil, name: String? = nil, reason: String? = nil) {
            self.available = available
            self.selection = selection
            self.id = id
            self.name = name
            self.reason = reason
        }
    }

    public struct TPM: Sendable, Hashable, Codable {
        public var available: Bool
        public var tcti: String
        /// Its dictionary-attack state, when it could be read.
        public var lockedOut: Bool?
        public var failedTries: UInt32?
        public var maxTries: UInt32?
        /// Why it is not available.
        public var reason: String?

        package init(available: Bool, tcti: String, lockedOut: Bool? = nil, failedTries: UInt32? = nil,
                     maxTries: UInt32? = nil, reason: String? = nil) {
            self.available = available
            self.tcti = tcti
            self.lockedOut = lockedOut
            self.failedTries = failedTries
            self.maxTries = maxTries
            self.reason = reason
        }
    }

    /// Whether the vault opened (its database and the enrolment store);
    /// `reason` says why not (a damaged database is not a TPM problem).
    public struct Vault: Sendable, Hashable, Codable {
        public var available: Bool
        public var reason: String?

        package init(available: Bool, reason: String? = nil) {
            self.available = available
            self.reason = reason
        }
    }

    /// The state folder.
    public var home: String
    public var reader: Reader
    public var tpm: TPM
    public var vault: Vault
    public var passcodeSet: Bool?
    public var fingers: [Finger]
    /// Why no finger can match although the vault opened: its enrolled
    /// fingers' store was altered outside an enrolment (`fingers` is then
    /// empty). In the JSON as `fingersProblem`, a message.
    public var fingersProblem: DeviceError?
    public var biometryLockout: Bool?
    /// Failed matches in a row.
    public var failedAttempts: Int?
    public var items: Int?
    /// How many matching touches a biometric authentication takes (nil
    /// while the vault is not open). In the JSON as a number.
    public var matchingTouches: MatchingTouches?
    /// Why parts are unknown: what stopped the vault or the TPM. Not in
    /// the JSON.
    public var problem: DeviceError?

    package init(home: String, reader: Reader, tpm: TPM, vault: Vault, passcodeSet: Bool? = nil, fingers: [Finger],
                 biometryLockout: Bool? = nil, failedAttempts: Int? = nil, items: Int? = nil, problem: DeviceError? = nil) {
        self.home = home
        self.reader = reader
        self.tpm = tpm
        self.vault = vault
        self.passcodeSet = passcodeSet
        self.fingers = fingers
        self.biometryLockout = biometryLockout
        self.failedAttempts = failedAttempts
        self.items = items
        self.problem = problem
    }

    enum CodingKeys: String, CodingKey {
        case home, reader, tpm, vault, passcodeSet, fingers, fingersProblem, biometryLockout, failedAttempts, items, matchingTouches
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(home, forKey: .home)
        try container.encode(reader, forKey: .reader)
        try container.encode(tpm, forKey: .tpm)
        try container.encode(vault, forKey: .vault)
        try container.encode(passcodeSet, forKey: .passcodeSet)
        try container.encode(fingers, forKey: .fingers)
        try container.encodeIfPresent(fingersProblem?.description, forKey: .fingersProblem)
        try container.encode(biometryLockout, forKey: .biometryLockout)
        try container.encode(failedAttempts, forKey: .failedAttempts)
        try container.encode(items, forKey: .items)
        try container.encode(matchingTouches?.rawValue, forKey: .matchingTouches)
    }
}
