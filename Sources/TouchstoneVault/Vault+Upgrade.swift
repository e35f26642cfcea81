import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM

/// From the first release's TPM scheme to scheme 2, with nothing lost.
///
/// The first release bound every biometric blob to an NV index holding the
/// domain state (PolicyNV, EQ), sealed passcode blobs with the passcode's
/// unsalted authValue, and kept the prints in files under `prints/`. The
/// upgrade runs when such a vault is opened (writable, with its TPM); it
/// needs no passcode:
///
/// 1. the two counters are defined;
/// 2. the print files are read and checked against the index: the set is
///    trusted only if the domain state they give is the one the index
///    holds (a print planted in the folder makes it differ: the set is
///    then recorded as tampered, and no finger matches until an enrolment);
/// 3. the current-set key of the index's state and biometry-any are opened
///    through their biometric branch (which the index still satisfies) and
///    sealed to the enrolment counter; current-set keys of earlier states,
///    invalidated, lose their blobs, so no rewound index reopens them;
/// 4. one commit stores it all, the set's record keeping its domain state;
///    then the index is undefined and the print files deleted.
///
/// The passcode blobs are sealed anew (salted, bound to the passcode
/// counter) at the first passcode proof (`upgradePasscodeBlobs`); until
/// then biometry-any keeps the first release's whole blob as its passcode
/// blob.
extension Vault {
    /// meta: the first release's enrolment-state index, until undefined.
    static let legacyIndexKey = "legacy_nv_index"

    func upgradeFromFirstScheme() throws(VaultError) {
        if let leftover = try metaInt(Self.legacyIndexKey), !db.isReadOnly {
            try? tpm.undefineEnrollmentIndex(UInt32(truncatingIfNeeded: leftover))
            try setMeta(Self.legacyIndexKey, nil)
        }
        guard let index = try metaInt("nv_index").map({ UInt32(truncatingIfNeeded: $0) }) else { return }
        try requireWritable()
        let state = try? tpm.readEnrollmentState(index)
        let legacy = try legacyFingers()
        let (enrollment, generation) = try defineCounter(.enrollment)
        let (passcodeCounter, passcodeGeneration) = try defineCounter(.passcode)
        let names = [enrollment.handle: enrollment.name, passcodeCounter.handle: passcodeCounter.name]
        let biometricPolicy = SealPolicy.biometricOnly(BiometricCondition(counter: enrollment.handle, atMost: generation))

        // The keys, through the first release's biometric branch.
        var updates: [(id: Int64, sealed: [UInt8], generation: UInt64?, passcodeSealed: [UInt8]?)] = []
        for key in try classKeys().values {
            switch key.kind {
            case .biometryCurrentSet?:
                if let state, key.epoch == state, let secret = openFirstSchemeBiometric(key) {
                    let blob = try withTPM { () throws(TPMError) in try tpm.seal(secret, policy: biometricPolicy, expectedNames: names) }
                    updates.append((key.id, blob.serialized(), generation, nil))
                } else {
                    updates.append((key.id, [], nil, nil))  // invalidated: stays so
                }
            case .biometryAny?:
                let blob = try openFirstSchemeBiometric(key).map { secret throws(VaultError) in
                    try withTPM { () throws(TPMError) in try tpm.seal(secret, policy: biometricPolicy, expectedNames: names) }
                }
                updates.append((key.id, blob?.serialized() ?? [], generation, key.sealed))
            case .passcode?, nil:
                break
            }
        }

        // The prints, trusted only as the index's state vouches for them.
        var problem: String?
        var prints: [EnrolledPrint] = []
        var setState = domainState(reader: nil, prints: [], generation: generation)
        switch legacy {
        case .none:
            break
        case .some(.unreadable(let why)):
            problem = "the first release's print files could not be read at the upgrade (\(why)); enrol the fingers again"
        case .some(.set(let reader, let files, let epoch)):
            let computed = DomainState.compute(reader: reader, prints: files, epoch: epoch).withUnsafeBytes { Array($0) }
            if let state, computed == state {
                prints = files
                setState = state  // what LocalAuthentication showed stays
            } else if !files.isEmpty {
                problem = "the first release's print files did not match the TPM's enrolment state at the upgrade (a print added, replaced or removed outside an enrolment); enrol the fingers again"
            }
        }
        let reader = prints.first?.reader
        let record = try sealFingers(EnrolledFingers(reader: reader, prints: prints, generation: generation, domainState: setState))
        let salt = SecureBytes.random(count: PasscodeAuth.saltSize).withUnsafeBytes { Array($0) }

        try db.transaction { () throws(VaultError) in
            for update in updates {
                try db.query("UPDATE class_keys SET sealed = ?, previous = NULL, epoch = NULL, generation = ?, passcode_sealed = ? WHERE id = ?",
                             [.blob(update.sealed), update.generation.map { .integer(Int64(bitPattern: $0)) } ?? .null,
                              update.passcodeSealed.map { .blob($0) } ?? .null, .integer(update.id)])
            }
            try storeFingers(record, generation: generation)
            try setMeta(Self.fingersProblemKey, problem.map { Array($0.utf8) })
            try recordCounter(enrollment, generation: generation)
            try recordCounter(passcodeCounter, generation: passcodeGeneration)
            try setMeta(Self.saltKey, salt)
            try setMeta("nv_index", nil)
            try setMeta("index_auth", nil)
            try setMetaInt(Self.legacyIndexKey, Int(index))
        }
        db.checkpointTruncating()
        if (try? tpm.undefineEnrollmentIndex(index)) != nil || !((try? tpm.enrollmentIndexExists(index)) ?? true) {
            try setMeta(Self.legacyIndexKey, nil)
        }
        removeLegacyPrintFiles()
    }

    /// A first-release biometric key's secret, through its biometric branch
    /// (the blob, or the one before an interrupted re-seal); nil when the
    /// index no longer opens it.
    private func openFirstSchemeBiometric(_ key: ClassKey) -> SecureBytes? {
        for bytes in [key.sealed, key.previous].compactMap({ $0 }) where !bytes.isEmpty {
            guard let blob = try? Self.blob(bytes), blob.policy.biometric != nil else { continue }
            if let secret = try? tpm.unseal(blob, via: .biometric) { return secret }
        }
        return nil
    }

    enum LegacyFingers {
        case set(reader: ReaderIdentity, prints: [EnrolledPrint], epoch: SecureBytes)
        case unreadable(String)
    }

    var legacyPrintsFolder: URL { home.appendingPathComponent("prints") }

    /// The first release's print files of this vault's user on the
    /// recorded reader; nil when there are none.
    private func legacyFingers() throws(VaultError) -> LegacyFingers? {
        guard let text = try setting("reader"), let slash = text.firstIndex(of: "/"),
              FileManager.default.fileExists(atPath: legacyPrintsFolder.path) else { return nil }
        let reader = ReaderIdentity(driver: String(text[..<slash]), deviceID: String(text[text.index(after: slash)...]))
        do throws(FingerprintError) {
            let store = try FileEnrollmentStore(root: legacyPrintsFolder)
            guard let epoch = try store.epoch(user: user, reader: reader) else { return nil }
            let prints = try store.fingers(user: user, reader: reader).map { finger throws(FingerprintError) in try store.load(finger, user: user, reader: reader) }
            return .set(reader: reader, prints: prints, epoch: epoch)
        } catch {
            return .unreadable("\(error)")
        }
    }

    /// Deletes the first release's print files (the vault holds the set
    /// now); what cannot be deleted is left, and never read again.
    private func removeLegacyPrintFiles() {
        let folder = legacyPrintsFolder.path
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return }
        var directories: [String] = []
        while let relative = walker.nextObject() as? String {
            let path = folder + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { continue }
            if isDirectory.boolValue { directories.append(path) } else { unlink(path) }
        }
        for directory in directories.sorted(by: { $0.count > $1.count }) { rmdir(directory) }
        rmdir(folder)
    }

    /// The first passcode proof of an upgraded vault: the passcode key and
    /// biometry-any's passcode blob sealed anew as scheme 2's (salted
    /// authValue, bound to the passcode counter), and biometry-any's
    /// biometric blob made if the upgrade could not.
    func upgradePasscodeBlobs(_ passcode: PasscodeAuth, passcodeKey: ClassKey, secret: SecureBytes) throws(VaultError) {
        let counter = try requireCounter(.passcode)
        let generation = try committedGeneration(.passcode)
        let names = try sealingNames([counter])
        let auth = passcode.salted(with: try passcodeSalt())
        let policy = SealPolicy.passcode(counter: CounterCondition(counter: counter.handle, atMost: generation))
        let passBlob = try withTPM { () throws(TPMError) in try tpm.seal(secret, policy: policy, passcode: auth, expectedNames: names) }
        var anyUpdates: [(Int64, [UInt8], [UInt8], UInt64?)] = []
        for key in try classKeys().values where key.kind == .biometryAny {
            let anySecret = try biometryAnySecret(key, passcode: passcode)
            let anyPasscode = try withTPM { () throws(TPMError) in try tpm.seal(anySecret, policy: policy, passcode: auth, expectedNames: names) }
            var biometric = key.sealed
            var biometricGeneration = key.generation
            if biometric.isEmpty {
                let enrollment = try requireCounter(.enrollment)
                let current = try committedGeneration(.enrollment)
                let names = try sealingNames([enrollment])
                biometric = try withTPM { () throws(TPMError) in
                    try tpm.seal(anySecret, policy: .biometricOnly(BiometricCondition(counter: enrollment.handle, atMost: current)),
                                 expectedNames: names)
                }.serialized()
                biometricGeneration = current
            }
            anyUpdates.append((key.id, anyPasscode.serialized(), biometric, biometricGeneration))
        }
        try db.transaction { () throws(VaultError) in
            try db.query("UPDATE class_keys SET sealed = ?, previous = NULL WHERE id = ?",
                         [.blob(passBlob.serialized()), .integer(passcodeKey.id)])
            for (id, passcodeBlob, biometric, generation) in anyUpdates {
                try db.query("UPDATE class_keys SET passcode_sealed = ?, sealed = ?, generation = ? WHERE id = ?",
                             [.blob(passcodeBlob), .blob(biometric), generation.map { .integer(Int64(bitPattern: $0)) } ?? .null,
                              .integer(id)])
            }
        }
        db.checkpointTruncating()
    }
}
