import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM

/// The enrolled fingers, as the vault keeps them (scheme 2): one record
/// per enrolment generation in the `fingers` table, sealed with
/// XChaCha20-Poly1305 under a key of the root key's (`fingersKey`), its
/// associated data binding the generation. The live set is the record of
/// the generation the TPM's enrolment counter is at: a record added,
/// replaced or removed outside an enrolment change, one from an older copy
/// of the vault, or one from another vault never becomes the live set; it
/// is reported (`fingersTampered`), and the passcode still opens what it
/// may.
///
/// A change writes the new set's record beside the old one, with the keys
/// for the new generation, in one commit; the counter's increment then
/// makes it the live set (docs/vault.md, "Scheme 2").
package struct EnrolledFingers: Sendable, Equatable {
    /// The reader the prints were enrolled on (nil when none is enrolled).
    package let reader: ReaderIdentity?
    /// The prints, sorted by finger.
    package let prints: [EnrolledPrint]
    /// The enrolment generation this set is for.
    package let generation: UInt64
    /// LocalAuthentication's evaluatedPolicyDomainState for this set: 32
    /// bytes that change with every enrolment change.
    package let domainState: [UInt8]

    package var fingers: [Finger] { prints.map(\.finger) }

    init(reader: ReaderIdentity?, prints: [EnrolledPrint], generation: UInt64, domainState: [UInt8]) {
        self.reader = prints.isEmpty ? nil : reader
        self.prints = prints.sorted { $0.finger < $1.finger }
        self.generation = generation
        self.domainState = domainState
    }
}

extension Vault {
    /// meta: why the enrolled set could not be trusted when a first-release
    /// vault was upgraded (its print files did not match the TPM's state).
    static let fingersProblemKey = "fingers_problem"
    /// The most fingers a set holds (fprintd's ten), and the largest print.
    package static let maximumFingers = 10
    package static let maximumPrintSize = 1 << 20
    static let fingersRecordVersion: UInt8 = 1
    static let fingersLabel = Array("touchstone.fingers.v1".utf8)
    static let domainStateLabel = Array("touchstone.domain-state.v2".utf8)

    /// The live enrolled set: the record of the generation the enrolment
    /// counter is at (its name checked), opened and checked. Throws
    /// `passcodeNotSet` without a passcode, `fingersTampered` when the
    /// record is missing, altered or not this vault's.
    package func enrolledFingers() throws(VaultError) -> EnrolledFingers {
        let counter = try requireCounter(.enrollment)
        if let problem = try meta(Self.fingersProblemKey) {
            throw VaultError.fingersTampered(String(decoding: problem, as: UTF8.self))
        }
        var generation = try readCounter(counter)
        for _ in 0..<3 {
            if let sealed = try db.firstRow("SELECT sealed FROM fingers WHERE generation = ?",
                                            [.integer(Int64(bitPattern: generation))], { $0.blob(0) }) {
                return try openFingers(sealed, generation: generation)
            }
            // A change by another process may have moved the counter on
            // and removed this record meanwhile: look again.
            let now = try readCounter(counter)
            if now == generation { break }
            generation = now
        }
        let committed = try committedGeneration(.enrollment)
        throw VaultError.fingersTampered("it has no record for the TPM's enrolment generation \(generation) (the vault's is \(committed)): the store was replaced by an older copy, or altered")
    }

    /// The enrolled fingers' names (none without a passcode); throws as
    /// `enrolledFingers` when they cannot be trusted.
    package func enrolledFingerNames() throws(VaultError) -> [Finger] {
        guard isPasscodeSet else { return [] }
        return try enrolledFingers().fingers
    }

    /// The domain state now (nil without a passcode).
    package func currentDomainState() throws(VaultError) -> [UInt8]? {
        guard isPasscodeSet else { return nil }
        return try enrolledFingers().domainState
    }

    /// Replaces the enrolled set with `prints` (on `reader`): the change
    /// that adds, replaces or removes fingers. `proof` must hold the
    /// passcode, which the TPM checks (and gives biometry-any's secret for
    /// its new blob).
    ///
    /// The steps, each of which may be cut short (`Vault.steps`): the new
    /// keys are sealed for the next generation (a new current-set key,
    /// biometry-any's biometric blob); one commit stores them with the new
    /// set's record, the generation and the increment marked pending; the
    /// enrolment counter is incremented; the earlier records and blobs are
    /// deleted. Before the increment the old set is the live one (and its
    /// keys open); after it the new one, and the old keys never again.
    @discardableResult
    package func changeFingers(to prints: [EnrolledPrint], reader: ReaderIdentity?, proof: VaultProof) throws(VaultError) -> EnrolledFingers {
        try requireWritable()
        guard let passcode = proof.passcode else { throw VaultError.authenticationRequired }
        let passcodeKey = try passcodeClassKey()
        if proof.openedClassKeys[passcodeKey.id] == nil { try verifyPasscode(passcode) }
        guard prints.count <= Self.maximumFingers, Set(prints.map(\.finger)).count == prints.count else {
            throw VaultError.invalidInput("a set holds at most \(Self.maximumFingers) fingers, each once")
        }
        for print in prints {
            guard !print.data.isEmpty, print.data.count <= Self.maximumPrintSize, print.reader == reader else {
                throw VaultError.invalidInput("the print of \(print.finger.fprintdName) is empty, too large, or from another reader")
            }
        }
        if try pendingRoles().contains(.enrollment) { try completeIncrement(.enrollment) }
        let counter = try requireCounter(.enrollment)
        let value = try readCounter(counter)
        let committed = try committedGeneration(.enrollment)
        // A counter moved on by someone else (its name is ours: it is this
        // vault's counter) closed every biometric blob; the passcode, just
        // checked, proves the right to start again from where it is.
        guard value >= committed else {
            throw VaultError.corrupted("the TPM's enrolment counter is at \(value), the vault's keys are for \(committed)")
        }
        let next = value + 1
        let names = try sealingNames([counter])
        let any = try classKey(.biometryAny)
        let anySecret = try biometryAnySecret(any, passcode: passcode)
        let anyBlob = try withTPM { () throws(TPMError) in
            try tpm.seal(anySecret, policy: .biometricOnly(BiometricCondition(counter: counter.handle, atMost: next)),
                         expectedNames: names)
        }
        let (currentPK, currentBlob) = try sealCurrentSetKey(generation: next, counter: counter, names: names)
        let set = EnrolledFingers(reader: reader, prints: prints, generation: next,
                                  domainState: domainState(reader: reader, prints: prints, generation: next))
        let record = try sealFingers(set)
        try step("fingers-sealed")
        try db.transaction { () throws(VaultError) in
            // Another process's change since the reads above: its set would
            // be lost under this one.
            guard try committedGeneration(.enrollment) == committed, try !pendingRoles().contains(.enrollment) else {
                throw VaultError.concurrentChange
            }
            try storeFingers(record, generation: next)
            try db.query("UPDATE class_keys SET sealed = ?, previous = NULL, generation = ? WHERE id = ?",
                         [.blob(anyBlob.serialized()), .integer(Int64(bitPattern: next)), .integer(any.id)])
            try insertCurrentSetKey(publicKey: currentPK, blob: currentBlob, generation: next)
            try setCommittedGeneration(.enrollment, next)
            try setMeta(Self.fingersProblemKey, nil)
            try setMeta("setting.reader", set.reader.map { Array($0.description.utf8) })
            try markPending(.enrollment)
        }
        try step("fingers-committed")
        try completeIncrement(.enrollment)
        try step("fingers-incremented")
        try removeSuperseded(.enrollment)
        return set
    }

    // MARK: - Records

    func storeFingers(_ sealed: [UInt8], generation: UInt64) throws(VaultError) {
        try db.query("INSERT OR REPLACE INTO fingers(generation, sealed) VALUES(?, ?)",
                     [.integer(Int64(bitPattern: generation)), .blob(sealed)])
    }

    static func fingersAD(generation: UInt64) -> [UInt8] {
        var writer = ByteWriter()
        writer.raw(fingersLabel)
        writer.u64(generation)
        return writer.bytes
    }

    /// version, reader (present flag, driver, device id), domain state,
    /// then each print: finger name, data.
    func sealFingers(_ set: EnrolledFingers) throws(VaultError) -> [UInt8] {
        var writer = ByteWriter(capacity: 64 + set.prints.reduce(0) { $0 + $1.data.count + 32 })
        writer.u8(Self.fingersRecordVersion)
        if let reader = set.reader {
            writer.u8(1)
            writer.sized16(Array(reader.driver.utf8))
            writer.sized16(Array(reader.deviceID.utf8))
        } else {
            writer.u8(0)
        }
        writer.sized16(set.domainState)
        writer.u8(UInt8(set.prints.count))
        for print in set.prints {
            writer.sized16(Array(print.finger.fprintdName.utf8))
            writer.sized32(print.data)
        }
        var plaintext = writer.bytes
        defer { secureWipe(&plaintext) }
        return fingersKey.seal(plaintext, ad: Self.fingersAD(generation: set.generation))
    }

    func openFingers(_ sealed: [UInt8], generation: UInt64) throws(VaultError) -> EnrolledFingers {
        let tampered = VaultError.fingersTampered("its record for the current enrolment does not open: altered, or not this vault's")
        let decoded: EnrolledFingers?? = fingersKey.open(sealed, ad: Self.fingersAD(generation: generation)) { plaintext in
            try? Self.decodeFingers(Array(plaintext), generation: generation)
        }
        guard let opened = decoded else { throw tampered }
        guard let set = opened else {
            throw VaultError.fingersTampered("its record for the current enrolment opens but does not parse")
        }
        return set
    }

    static func decodeFingers(_ bytes: [UInt8], generation: UInt64) throws(ByteReader.Truncated) -> EnrolledFingers {
        var reader = ByteReader(bytes)
        guard try reader.u8("version") == fingersRecordVersion else { throw ByteReader.Truncated(what: "version") }
        var identity: ReaderIdentity?
        if try reader.u8("reader flag") == 1 {
            let driver = String(decoding: try reader.sized16("driver", max: 4096), as: UTF8.self)
            let device = String(decoding: try reader.sized16("device id", max: 4096), as: UTF8.self)
            identity = ReaderIdentity(driver: driver, deviceID: device)
        }
        let state = try reader.sized16("domain state", max: 64)
        let count = Int(try reader.u8("count"))
        guard count <= maximumFingers else { throw ByteReader.Truncated(what: "count") }
        var prints: [EnrolledPrint] = []
        for _ in 0..<count {
            let name = String(decoding: try reader.sized16("finger", max: 64), as: UTF8.self)
            guard let finger = Finger(fprintdName: name), let identity else { throw ByteReader.Truncated(what: "finger") }
            prints.append(EnrolledPrint(finger: finger, reader: identity, data: try reader.sized32("print", max: maximumPrintSize)))
        }
        guard reader.isAtEnd, state.count == DomainState.length else { throw ByteReader.Truncated(what: "end") }
        return EnrolledFingers(reader: identity, prints: prints, generation: generation, domainState: state)
    }

    /// The domain state of a set: keyed BLAKE2b-256 (a key of the root
    /// key's, so it says nothing of the prints to whoever sees it) over the
    /// reader, the prints and the generation, which no later set repeats.
    func domainState(reader: ReaderIdentity?, prints: [EnrolledPrint], generation: UInt64) -> [UInt8] {
        var parts: [[UInt8]] = [Self.domainStateLabel, Array((reader?.driver ?? "").utf8), Array((reader?.deviceID ?? "").utf8)]
        for print in prints.sorted(by: { $0.finger < $1.finger }) {
            parts.append(Array(print.finger.fprintdName.utf8))
            parts.append(print.data)
        }
        parts.append(withUnsafeBytes(of: generation.bigEndian) { Array($0) })
        return Crypto.keyedHash(domainStateKey, parts)
    }
}
