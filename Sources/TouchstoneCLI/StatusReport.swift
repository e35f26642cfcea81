/// What `status` reports; `--json` prints it as one object. Every key the
/// contract names is always present (null when it cannot be known, for
/// example the item count when the TPM is unreachable).
struct StatusReport: Encodable {
    struct Reader: Encodable {
        var available: Bool
        /// `auto`, `sim` or the id asked for.
        var selection: String
        /// The reader's id ("driver/device"), as `--reader` takes it.
        var id: String?
        var name: String?
        /// Why it is not available.
        var reason: String?
    }

    struct TPMState: Encodable {
        var available: Bool
        var tcti: String
        var lockedOut: Bool?
        var failedTries: UInt32?
        var maxTries: UInt32?
        var reason: String?
    }

    /// Whether the vault opened (its database and the enrolment store);
    /// `reason` says why not (a damaged database is not a TPM problem).
    struct VaultState: Encodable {
        var available: Bool
        var reason: String?
    }

    var home: String
    var reader: Reader
    var tpm: TPMState
    var vault = VaultState(available: false)
    var passcodeSet: Bool?
    var fingers: [String]
    var biometryLockout: Bool?
    var failedAttempts: Int?
    var items: Int?

    enum CodingKeys: String, CodingKey {
        case home, reader, tpm, vault, passcodeSet, fingers, biometryLockout, failedAttempts, items
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(home, forKey: .home)
        try container.encode(reader, forKey: .reader)
        try container.encode(tpm, forKey: .tpm)
        try container.encode(vault, forKey: .vault)
        try container.encode(passcodeSet, forKey: .passcodeSet)
        try container.encode(fingers, forKey: .fingers)
        try container.encode(biometryLockout, forKey: .biometryLockout)
        try container.encode(failedAttempts, forKey: .failedAttempts)
        try container.encode(items, forKey: .items)
    }

    /// The report for people, one line per part.
    var text: String {
        func known<T>(_ value: T?, _ show: (T) -> String) -> String { value.map(show) ?? "unknown" }
        let readerLine = reader.available
            ? "available: \(reader.name ?? "") (\(reader.id ?? reader.selection))"
            : "not available: \(reader.reason ?? "unknown")"
        var tpmLine = tpm.available ? "available (\(tpm.tcti))" : "not available: \(tpm.reason ?? "unknown")"
        if tpm.lockedOut == true { tpmLine += "; in dictionary-attack lockout" }
        let vaultLine = vault.available ? "open" : "not open: \(vault.reason ?? "unknown")"
        return """
            state:     \(home)
            reader:    \(readerLine)
            TPM:       \(tpmLine)
            vault:     \(vaultLine)
            passcode:  \(known(passcodeSet) { $0 ? "set" : "not set" })
            fingers:   \(fingers.isEmpty ? "none enrolled" : fingers.joined(separator: ", "))
            biometry:  \(known(biometryLockout) { $0 ? "locked out (the passcode clears it)" : "not locked out" }), \(known(failedAttempts) { "\($0)" }) failed attempts in a row
            items:     \(known(items) { "\($0)" })
            """
    }
}
