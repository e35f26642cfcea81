import Foundation
import TouchstoneSecure
import TouchstoneTPM

/// Scheme 2's two TPM NV counters (docs/vault.md, "Scheme 2"; the TPM side
/// in TPM+Counter.swift): the enrolment counter, which every biometric
/// blob is bound to (counter <= the generation it was sealed for), and the
/// passcode counter, which every passcode blob is bound to the same way.
///
/// A change (of the enrolled fingers, of the passcode) seals the new blobs
/// for the next generation, commits them with that generation recorded and
/// an increment marked pending, then increments the counter and clears the
/// mark. Stopped at any point, the vault has the old set or the new one:
/// before the increment the old blobs still open and the new ones are not
/// used yet; after it only the new ones open, in this folder or any copy.
/// The next opening of the vault finishes a marked increment (no passcode
/// needed: the counters' authValues come from the root key).
enum CounterRole: String, CaseIterable, Sendable {
    case enrollment = "enrolment"
    case passcode

    /// meta: the counter's handle.
    var handleKey: String { "\(rawValue)_counter" }
    /// meta: its name, recorded at definition (after the first increment).
    var nameKey: String { "\(rawValue)_counter_name" }
    /// meta: ESYS's record of it (the passcode counter is used from this
    /// record, without a ReadPublic per process).
    var recordKey: String { "\(rawValue)_counter_record" }
    /// meta: the generation the committed blobs are sealed for. Equal to
    /// the counter's value, or one more while an increment is pending.
    var generationKey: String { "\(rawValue)_generation" }
    /// meta: the handle being defined, before the definition is recorded
    /// (a definition cut short is found again by it).
    var definingKey: String { "\(rawValue)_counter_defining" }
    /// The root-key subkey purpose of the counter's authValue.
    var authPurpose: String { "\(rawValue)-counter-auth" }

    var description: String { self == .enrollment ? "enrolment counter" : "passcode counter" }
}

/// A counter as the vault recorded it.
struct Counter {
    let role: CounterRole
    let handle: UInt32
    let name: [UInt8]
}

extension Vault {
    /// meta: the increments committed but perhaps not done yet, as the
    /// roles' names joined by ",".
    static let pendingKey = "pending_increments"

    func counter(_ role: CounterRole) throws(VaultError) -> Counter? {
        guard let handle = try metaInt(role.handleKey), let name = try meta(role.nameKey) else { return nil }
        return Counter(role: role, handle: UInt32(truncatingIfNeeded: handle), name: name)
    }

    func requireCounter(_ role: CounterRole) throws(VaultError) -> Counter {
        guard let counter = try counter(role) else { throw VaultError.passcodeNotSet }
        return counter
    }

    func counterAuth(_ role: CounterRole) -> PasscodeAuth {
        role == .enrollment ? enrollmentCounterAuth : passcodeCounterAuth
    }

    /// The generation the committed blobs of `role` are sealed for.
    func committedGeneration(_ role: CounterRole) throws(VaultError) -> UInt64 {
        guard let value = try metaInt(role.generationKey) else {
            throw VaultError.corrupted("the vault records no \(role.description) generation")
        }
        return UInt64(bitPattern: Int64(value))
    }

    func setCommittedGeneration(_ role: CounterRole, _ value: UInt64?) throws(VaultError) {
        try setMetaInt(role.generationKey, value.map { Int(Int64(bitPattern: $0)) })
    }

    /// The counter's value, its name checked against the recorded one
    /// first (asked from the TPM afresh: NV_ReadPublic, then NV_Read). An
    /// index with another name was replaced by someone else:
    /// `nvIndexReplaced`, and its value is not trusted.
    func readCounter(_ counter: Counter) throws(VaultError) -> UInt64 {
        try checkName(counter)
        return try withTPM { () throws(TPMError) in try tpm.readCounter(counter.handle) }
    }

    /// Throws `nvIndexReplaced` (or, for an index that is gone,
    /// `counterMissing`) unless the TPM's index at the counter's handle has
    /// the recorded name. Called before anything is sealed to a counter.
    func checkName(_ counter: Counter) throws(VaultError) {
        guard let current = try withTPM({ () throws(TPMError) in try tpm.currentNVName(counter.handle) }) else {
            throw VaultError.tpm(.nvIndexReplaced(handle: counter.handle))
        }
        guard current == counter.name else { throw VaultError.tpm(.nvIndexReplaced(handle: counter.handle)) }
    }

    /// The names the blobs about to be sealed rely on, checked.
    func sealingNames(_ counters: [Counter]) throws(VaultError) -> [UInt32: [UInt8]] {
        var names: [UInt32: [UInt8]] = [:]
        for counter in counters {
            try checkName(counter)
            names[counter.handle] = counter.name
        }
        return names
    }

    /// Makes the passcode counter known to the TPM layer from its record,
    /// so a passcode unseal needs no NV_ReadPublic (the TPM still checks
    /// the name: the policy names it).
    func adoptPasscodeCounter() throws(VaultError) {
        guard let counter = try counter(.passcode), let record = try meta(CounterRole.passcode.recordKey) else { return }
        tpm.adoptNVIndex(counter.handle, record: record)
    }

    // MARK: - Definition

    /// Defines the counter for `role` (with the root key's authValue for
    /// it), increments it once and returns it and its value. The handle is
    /// recorded before the definition: a definition cut short before the
    /// vault recorded it is found again and used (the authValue proves it
    /// is this vault's) instead of leaking an index.
    func defineCounter(_ role: CounterRole) throws(VaultError) -> (Counter, UInt64) {
        let auth = counterAuth(role)
        if let handle = try metaInt(role.definingKey).map({ UInt32(truncatingIfNeeded: $0) }),
           let value = try? tpm.incrementCounter(handle, auth: auth),
           let name = try? tpm.nvName(handle) {
            return (Counter(role: role, handle: handle, name: name), value)
        }
        let handle = try withTPM { () throws(TPMError) in try tpm.freeCounterIndex() }
        try setMetaInt(role.definingKey, Int(handle))
        let (value, name) = try withTPM { () throws(TPMError) in try tpm.defineCounter(handle, auth: auth) }
        return (Counter(role: role, handle: handle, name: name), value)
    }

    /// Records a defined counter (inside the caller's transaction).
    func recordCounter(_ counter: Counter, generation: UInt64) throws(VaultError) {
        try setMetaInt(counter.role.handleKey, Int(counter.handle))
        try setMeta(counter.role.nameKey, counter.name)
        try setMeta(counter.role.recordKey, (try? tpm.nvIndexRecord(counter.handle)) ?? [])
        try setCommittedGeneration(counter.role, generation)
        try setMeta(counter.role.definingKey, nil)
    }

    /// Forgets the counter (inside the caller's transaction); the caller
    /// undefines it after the commit.
    func forgetCounter(_ role: CounterRole) throws(VaultError) {
        for key in [role.handleKey, role.nameKey, role.recordKey, role.generationKey, role.definingKey] {
            try setMeta(key, nil)
        }
    }

    // MARK: - Increments

    /// Marks an increment of `role` pending (inside the transaction that
    /// commits the blobs for the next generation).
    func markPending(_ role: CounterRole) throws(VaultError) {
        var roles = try pendingRoles()
        roles.insert(role)
        try setMeta(Self.pendingKey, Array(roles.map(\.rawValue).sorted().joined(separator: ",").utf8))
    }

    func pendingRoles() throws(VaultError) -> Set<CounterRole> {
        guard let bytes = try meta(Self.pendingKey) else { return [] }
        return Set(String(decoding: bytes, as: UTF8.self).split(separator: ",").compactMap { CounterRole(rawValue: String($0)) })
    }

    /// Brings the counter up to the committed generation: increments it
    /// when it is one behind (a change committed, its increment not done),
    /// then clears the mark. Runs under the database's write lock, so two
    /// processes never both increment for one change. A counter ahead of
    /// the vault, or more than one behind, is not this vault's doing:
    /// `.corrupted` naming it (the change it would take cannot be known).
    func completeIncrement(_ role: CounterRole) throws(VaultError) {
        try db.transaction { () throws(VaultError) in
            guard try pendingRoles().contains(role) else { return }
            let counter = try requireCounter(role)
            let committed = try committedGeneration(role)
            let value = try readCounter(counter)
            if value + 1 == committed {
                _ = try withTPM { () throws(TPMError) in try tpm.incrementCounter(counter.handle, auth: counterAuth(role)) }
            } else if value != committed {
                throw VaultError.corrupted("the TPM's \(role.description) is at \(value), the vault's keys are for \(committed)")
            }
            var roles = try pendingRoles()
            roles.remove(role)
            try setMeta(Self.pendingKey, roles.isEmpty ? nil : Array(roles.map(\.rawValue).sorted().joined(separator: ",").utf8))
        }
    }

    /// Finishes what a change cut short left marked (at opening).
    func completePendingIncrements() throws(VaultError) {
        for role in try pendingRoles() where !db.isReadOnly {
            try completeIncrement(role)
            try removeSuperseded(role)
        }
    }

    /// After an increment: the blobs and records of earlier generations,
    /// which can never open again, are deleted (zeroed with secure_delete)
    /// and the log truncated.
    func removeSuperseded(_ role: CounterRole) throws(VaultError) {
        let generation = try committedGeneration(role)
        try db.transaction { () throws(VaultError) in
            switch role {
            case .enrollment:
                try db.query("DELETE FROM fingers WHERE generation < ?", [.integer(Int64(bitPattern: generation))])
                // Current-set keys of earlier sets stay (their items report
                // invalidated) without a blob.
                try db.query("UPDATE class_keys SET sealed = x'' WHERE kind = 'biometry-current-set' AND generation < ? AND sealed != x''",
                             [.integer(Int64(bitPattern: generation))])
            case .passcode:
                try db.query("UPDATE class_keys SET previous = NULL WHERE previous IS NOT NULL")
            }
        }
        db.checkpointTruncating()
    }
}
