import Foundation
import TestRigs
import Testing
import TestScopes
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM
@testable import TouchstoneVault

/// Scheme 2 attacked on a real swtpm with the owner's rights (empty owner
/// authorization, as on most PCs): an old copy of the vault with the
/// counters rewound or replaced, an old copy with the old passcode after a
/// change, fingers' records planted, replaced or removed; each next to the
/// legitimate use that works. And every change cut short at each step.
@Suite("Vault scheme 2: counters, old copies, the fingers' store", .offPool)
struct SchemeTwoTests {
    /// A rig whose TPM forgives wrong tries, with a current-set item and a
    /// passcode item, and one finger enrolled.
    func rig() throws -> VaultRig {
        let rig = try VaultRig()
        try rig.tpm.setDictionaryAttackParameters(maxTries: 20, recoveryTime: 600, lockoutRecovery: 0)
        try changeFingers(rig.vault)
        try rig.vault.add(secret("current"), attributes: ItemAttributes(service: "s", account: "current", access: .biometryCurrentSet))
        try rig.vault.add(secret("any"), attributes: ItemAttributes(service: "s", account: "any", access: .biometryAny))
        try rig.vault.add(secret("passcode"), attributes: ItemAttributes(service: "s", account: "passcode", access: .devicePasscode))
        return rig
    }

    var databaseFiles: [String] { [Vault.databaseName, Vault.databaseName + "-wal", Vault.databaseName + "-shm"] }

    /// The vault's files as they are (the copy an attacker keeps).
    func copyFiles(_ rig: VaultRig) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in databaseFiles {
            let url = rig.home.appendingPathComponent(name)
            if let data = try? Data(contentsOf: url) { files[name] = data }
        }
        return files
    }

    /// Puts the copy back in place of the vault's files.
    func restore(_ files: [String: Data], _ rig: VaultRig) throws {
        for name in databaseFiles { unlink(rig.home.appendingPathComponent(name).path) }
        for (name, data) in files { try data.write(to: rig.home.appendingPathComponent(name)) }
    }

    func counter(_ vault: Vault, _ role: CounterRole) throws -> Counter { try #require(try vault.counter(role)) }

    func blob(_ vault: Vault, _ kind: ClassKind, passcodeBlob: Bool = false) throws -> SealedBlob {
        let key = try vault.classKey(kind)
        return try SealedBlob(serialized: passcodeBlob ? try #require(key.passcodeSealed) : key.sealed)
    }

    // MARK: - (a) invalidation that never revives

    @Test("an old copy of the vault and the enrolment counter undefined and defined again (same public area, so the same name): the invalidated item stays closed; the live one opened before")
    func rewoundEnrolmentCounter() throws {
        let rig = try rig()
        let vault = rig.vault
        #expect(string(try vault.secret(service: "s", account: "current", proof: finger)) == "current")
        let oldCopy = try copyFiles(rig)
        let oldBlob = try blob(vault, .biometryCurrentSet)
        let enrolment = try counter(vault, .enrollment)
        let before = try rig.tpm.readCounter(enrolment.handle)

        try changeFingers(vault)
        #expect(throws: VaultError.itemInvalidated) { try vault.secret(service: "s", account: "current", proof: finger) }
        #expect(string(try vault.secret(service: "s", account: "any", proof: finger)) == "any")

        // The attack, with the owner's rights: the copy back, the counter
        // deleted and defined again with the same attributes.
        try restore(oldCopy, rig)
        try rig.tpm.undefineNVIndex(enrolment.handle)
        let (value, name) = try rig.tpm.defineCounter(enrolment.handle, auth: PasscodeAuth(passcodeString: "the attacker's"))
        #expect(name == enrolment.name)          // the vault's name check cannot tell
        #expect(value > before + 1)              // the counter can: it never goes back
        let attacked = try rig.reopen()
        #expect(throws: VaultError.self) { try attacked.secret(service: "s", account: "current", proof: finger) }
        #expect(throws: TPMError.enrollmentChanged) { try rig.tpm.unseal(oldBlob, via: .biometric) }
        // The copy's fingers are not the live set either: no record for the counter's value.
        #expect { try attacked.enrolledFingers() } throws: { error in
            guard case VaultError.fingersTampered(let why) = error else { return false }
            return why.contains("no record for the TPM's enrolment generation")
        }
        // The passcode still opens what it may.
        #expect(string(try attacked.secret(service: "s", account: "passcode", proof: passcode)) == "passcode")
    }

    @Test("the enrolment counter replaced by an ordinary index holding an old value: the TPM's enrolment state was replaced (exit 13), nothing opens through it and nothing is sealed to it")
    func replacedEnrolmentCounter() throws {
        let rig = try rig()
        let vault = rig.vault
        let enrolment = try counter(vault, .enrollment)
        let value = try rig.tpm.readCounter(enrolment.handle)
        let currentBlob = try blob(vault, .biometryCurrentSet)
        #expect(string(try vault.secret(service: "s", account: "current", proof: finger)) == "current")

        try replaceCounterWithOrdinaryIndex(rig.tpm, at: enrolment.handle, holding: value)

        let reopened = try rig.reopen()
        #expect(throws: VaultError.tpm(.nvIndexReplaced(handle: enrolment.handle))) {
            try reopened.secret(service: "s", account: "current", proof: finger)
        }
        #expect(throws: VaultError.tpm(.nvIndexReplaced(handle: enrolment.handle))) { try reopened.enrolledFingers() }
        #expect(throws: VaultError.tpm(.nvIndexReplaced(handle: enrolment.handle))) { try changeFingers(reopened) }
        #expect(VaultError.tpm(.nvIndexReplaced(handle: enrolment.handle)).description.contains("the TPM's enrolment state was replaced"))
        // The TPM itself refuses the key: PolicyNV extends with the planted index's name.
        #expect(throws: TPMError.self) { try rig.tpm.unseal(currentBlob, via: .biometric) }
        #expect(string(try reopened.secret(service: "s", account: "passcode", proof: passcode)) == "passcode")
    }

    @Test("the passcode counter replaced by an ordinary index: passcode items report it (exit 13), the TPM opens none")
    func replacedPasscodeCounter() throws {
        let rig = try rig()
        let counter = try counter(rig.vault, .passcode)
        let value = try rig.tpm.readCounter(counter.handle)
        let passcodeBlob = try blob(rig.vault, .passcode)
        try replaceCounterWithOrdinaryIndex(rig.tpm, at: counter.handle, holding: value)

        let reopened = try rig.reopen()
        #expect(throws: VaultError.tpm(.nvIndexReplaced(handle: counter.handle))) {
            try reopened.secret(service: "s", account: "passcode", proof: passcode)
        }
        let auth = rightPasscode.salted(with: try reopened.passcodeSalt())
        #expect(throws: TPMError.self) { try rig.tpm.unseal(passcodeBlob, via: .passcode(auth)) }
        #expect(string(try reopened.secret(service: "s", account: "any", proof: finger)) == "any")
    }

    @Test("the enrolment counter moved on by someone with its authValue: every biometric key closes (never reopens), the set is reported; the passcode's owner unenrols and enrols again, and biometry-any opens again")
    func enrolmentCounterMovedOn() throws {
        let rig = try rig()
        let vault = rig.vault
        #expect(string(try vault.secret(service: "s", account: "any", proof: finger)) == "any")
        let enrolment = try counter(vault, .enrollment)
        _ = try rig.tpm.incrementCounter(enrolment.handle, auth: vault.enrollmentCounterAuth)

        let reopened = try rig.reopen()
        expectTampered(reopened, "no record for the TPM's enrolment generation")
        #expect(throws: VaultError.itemInvalidated) { try reopened.secret(service: "s", account: "current", proof: finger) }
        #expect(string(try reopened.secret(service: "s", account: "passcode", proof: passcode)) == "passcode")
        // Starting again needs the passcode, and works from the counter's value.
        #expect(throws: VaultError.tpm(.wrongPasscode)) { try changeFingers(reopened, passcode: wrongPasscode, to: []) }
        try changeFingers(reopened, to: [])
        let again = try changeFingers(reopened, to: [testPrint(.leftIndex)])
        #expect(try reopened.enrolledFingers() == again)
        #expect(string(try reopened.secret(service: "s", account: "any", proof: finger)) == "any")
        #expect(throws: VaultError.itemInvalidated) { try reopened.secret(service: "s", account: "current", proof: finger) }
    }

    // MARK: - (b) passcode changes that shut out old copies

    @Test("after a passcode change, a copy from before with the old passcode opens nothing (the passcode counter moved on); the new passcode opens")
    func oldCopyOldPasscode() throws {
        let rig = try rig()
        let vault = rig.vault
        let oldCopy = try copyFiles(rig)
        let oldPasscodeBlob = try blob(vault, .passcode)
        let oldAnyBlob = try blob(vault, .biometryAny, passcodeBlob: true)
        let oldAuth = rightPasscode.salted(with: try vault.passcodeSalt())
        #expect(throws: Never.self) { try rig.tpm.unseal(oldPasscodeBlob, via: .passcode(oldAuth)) }  // it opens, before

        let newPasscode = PasscodeAuth(passcodeString: "brand new")
        try vault.changePasscode(from: rightPasscode, to: newPasscode)
        #expect(string(try vault.secret(service: "s", account: "passcode", proof: VaultProof(passcode: newPasscode))) == "passcode")
        #expect(throws: VaultError.tpm(.wrongPasscode)) { try vault.secret(service: "s", account: "passcode", proof: passcode) }

        try restore(oldCopy, rig)
        let attacked = try rig.reopen()
        #expect { try attacked.secret(service: "s", account: "passcode", proof: passcode) } throws: { error in
            guard case VaultError.corrupted(let why) = error else { return false }
            return why.contains("older than the TPM's passcode counter")
        }
        #expect(throws: TPMError.passcodeChanged) { try rig.tpm.unseal(oldPasscodeBlob, via: .passcode(oldAuth)) }
        #expect(throws: TPMError.passcodeChanged) { try rig.tpm.unseal(oldAnyBlob, via: .passcode(oldAuth)) }
        // Nor can the copy change the fingers with the old passcode.
        #expect(throws: VaultError.self) { try changeFingers(attacked) }
    }

    /// Every occurrence of `needle` in `haystack`.
    static func contains(_ haystack: Data, _ needle: [UInt8]) -> Bool {
        haystack.range(of: Data(needle)) != nil
    }

    @Test("after a passcode change the old blobs are gone from the database and its log, not only unused (secure_delete, TRUNCATE checkpoint)")
    func oldBlobsWiped() throws {
        let rig = try rig()
        let vault = rig.vault
        let old = [try vault.classKey(.passcode).sealed, try #require(try vault.classKey(.biometryAny).passcodeSealed)]
        // A reader that keeps a snapshot open cannot hold the log: the
        // change waits for it (another process reading), then truncates.
        let present = try copyFiles(rig).values
        for blob in old { #expect(present.contains { Self.contains($0, Array(blob.suffix(64))) }, "the blob is there before") }

        try vault.changePasscode(from: rightPasscode, to: PasscodeAuth(passcodeString: "another"))
        let files = try copyFiles(rig)
        #expect(files[Vault.databaseName + "-wal"].map(\.count) ?? 0 == 0, "the log is truncated")
        for (name, data) in files {
            for blob in old {
                // Any 32 bytes of the old blobs' private parts would do; the
                // whole tail is searched.
                #expect(!Self.contains(data, Array(blob.suffix(64))), "an old blob is still in \(name)")
            }
        }
    }

    // MARK: - (c) prints only an enrolment can add

    func expectTampered(_ vault: Vault, _ words: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(sourceLocation: sourceLocation) { try vault.enrolledFingers() } throws: { error in
            guard case VaultError.fingersTampered(let why) = error else { return false }
            return why.contains(words)
        }
    }

    @Test("a fingers record replaced by garbage, by another vault's, or by this vault's of another generation, or removed: reported, nothing matches from it, the passcode still opens; unenrolling every finger starts again")
    func alteredFingersRecord() throws {
        let rig = try rig()
        let vault = rig.vault
        let live = try vault.enrolledFingers()
        #expect(live.fingers == [.rightIndex])
        let generation = Int64(bitPattern: live.generation)
        let other = try VaultRig()
        try changeFingers(other.vault, to: [testPrint(.leftThumb)])
        let foreign = try #require(try other.database().rows("SELECT sealed FROM fingers", []) { $0.blob(0) }.first)
        let db = try rig.database()
        let own = try #require(try db.rows("SELECT sealed FROM fingers WHERE generation = ?", [.integer(generation)]) { $0.blob(0) }.first)

        let cases: [(String, () throws -> Void, String)] = [
            ("garbage", { try db.query("UPDATE fingers SET sealed = randomblob(200) WHERE generation = ?", [.integer(generation)]) },
             "does not open"),
            ("another vault's record", { try db.query("UPDATE fingers SET sealed = ? WHERE generation = ?", [.blob(foreign), .integer(generation)]) },
             "does not open"),
            ("this vault's record moved to another generation", {
                try db.query("DELETE FROM fingers")
                try db.query("INSERT INTO fingers(generation, sealed) VALUES(?, ?)", [.integer(generation + 1), .blob(own)])
             }, "no record"),
            ("removed", { try db.query("DELETE FROM fingers") }, "no record"),
        ]
        for (what, damage, words) in cases {
            try damage()
            let opened = try rig.reopen()
            expectTampered(opened, words)
            #expect(throws: VaultError.self, "\(what)") { try opened.currentDomainState() }
            #expect(string(try opened.secret(service: "s", account: "passcode", proof: passcode)) == "passcode", "\(what)")
            try db.query("DELETE FROM fingers")
            try db.query("INSERT INTO fingers(generation, sealed) VALUES(?, ?)", [.integer(generation), .blob(own)])
            #expect(try rig.reopen().enrolledFingers() == live, "\(what): put back, it is the live set again")
        }
        // Starting again: every finger unenrolled (with the passcode), then enrolled.
        try db.query("UPDATE fingers SET sealed = randomblob(200)")
        let opened = try rig.reopen()
        expectTampered(opened, "does not open")
        let cleared = try changeFingers(opened, to: [])
        #expect(cleared.prints.isEmpty)
        let again = try changeFingers(opened, to: [testPrint(.leftIndex)])
        #expect(try opened.enrolledFingers() == again)
    }

    @Test("the prints are stored encrypted: no template's bytes in the database or its log; this vault reads them back")
    func printsEncrypted() throws {
        let rig = try rig()
        let prints = [testPrint(.leftIndex), testPrint(.rightIndex)]
        try changeFingers(rig.vault, to: prints)
        #expect(try rig.reopen().enrolledFingers().prints == prints)
        for (name, data) in try copyFiles(rig) {
            for print in prints { #expect(!Self.contains(data, Array(print.data.prefix(32))), "a template in \(name)") }
        }
        // The control: the scan finds bytes that are there.
        let salt = try rig.vault.passcodeSalt()
        #expect(try copyFiles(rig).values.contains { Self.contains($0, salt) })
    }

    @Test("the passcode's authValue is salted per vault and per passcode: the same passcode gives another vault, and the same vault after a change, another authValue")
    func saltedAuthValue() throws {
        let first = try VaultRig(), second = try VaultRig()
        let a = rightPasscode.salted(with: try first.vault.passcodeSalt())
        let b = rightPasscode.salted(with: try second.vault.passcodeSalt())
        #expect(a.value != b.value)
        #expect(a.value != rightPasscode.value)
        // What the TPM checks is the salted value: the unsalted one opens nothing.
        let blob = try SealedBlob(serialized: try first.vault.classKey(.passcode).sealed)
        #expect(throws: Never.self) { try first.tpm.unseal(blob, via: .passcode(a)) }
        #expect(throws: TPMError.wrongPasscode) { try first.tpm.unseal(blob, via: .passcode(rightPasscode)) }
        try first.vault.changePasscode(from: rightPasscode, to: rightPasscode)
        let c = rightPasscode.salted(with: try first.vault.passcodeSalt())
        #expect(a.value != c.value)
        try first.vault.add(secret("p"), attributes: ItemAttributes(service: "s", account: "p", access: .devicePasscode))
        #expect(string(try first.vault.secret(service: "s", account: "p", proof: passcode)) == "p")
    }

    @Test("a change of the fingers needs the passcode: a wrong one changes nothing, and no proof without the passcode is taken")
    func changeNeedsPasscode() throws {
        let rig = try rig()
        let before = try rig.vault.enrolledFingers()
        #expect(throws: VaultError.tpm(.wrongPasscode)) { try changeFingers(rig.vault, passcode: wrongPasscode) }
        #expect(throws: VaultError.authenticationRequired) {
            try rig.vault.changeFingers(to: [testPrint()], reader: testReader, proof: finger)
        }
        #expect(try rig.vault.enrolledFingers() == before)
        #expect(string(try rig.vault.secret(service: "s", account: "current", proof: finger)) == "current")
    }

    @Test("the domain state is stable while the set is, and new at every change (even back to the same prints)")
    func domainState() throws {
        let rig = try rig()
        let print = testPrint()
        let first = try changeFingers(rig.vault, to: [print])
        #expect(try rig.reopen().currentDomainState() == first.domainState)
        let second = try changeFingers(rig.vault, to: [])
        let third = try changeFingers(rig.vault, to: [print])
        #expect(Set([first.domainState, second.domainState, third.domainState]).count == 3)
        #expect(third.prints == first.prints)
    }

    // MARK: - Changes cut short

    /// What a change stopped at `step` throws (the hook throws the
    /// vault's own error type, so the stop is one no vault step makes).
    static func stop(_ step: String) -> VaultError { .invalidInput("the test stopped the change at \(step)") }

    /// A vault whose change stops (throws) at `step`.
    func stopping(at step: String, _ rig: VaultRig) throws -> Vault {
        let vault = try rig.reopen()
        vault.interruption = { name throws(VaultError) in if name == step { throw Self.stop(step) } }
        return vault
    }

    @Test("an enrolment change stopped at each step: before the commit the old set and its keys, after it the new set once the vault is opened again; never both",
          arguments: ["fingers-sealed", "fingers-committed", "fingers-incremented"])
    func enrolmentStopped(_ step: String) throws {
        let rig = try rig()
        let old = try rig.vault.enrolledFingers()
        let vault = try stopping(at: step, rig)
        let newPrint = testPrint(.leftIndex)
        #expect(throws: Self.stop(step)) { try changeFingers(vault, to: old.prints + [newPrint]) }
        let committed = step != "fingers-sealed"
        if step == "fingers-committed" {
            // Not yet incremented: the old set is the live one, and the
            // new keys are not used for it.
            #expect(try vault.enrolledFingers() == old)
            #expect(string(try vault.secret(service: "s", account: "current", proof: finger)) == "current")
        }
        let reopened = try rig.reopen()  // finishes a marked increment
        let live = try reopened.enrolledFingers()
        #expect(live.fingers == (committed ? [.leftIndex, .rightIndex] : [.rightIndex]))
        #expect(try reopened.pendingRoles().isEmpty)
        if committed {
            #expect(throws: VaultError.itemInvalidated) { try reopened.secret(service: "s", account: "current", proof: finger) }
            #expect(try reopened.list().first { $0.attributes?.account == "current" }?.state == .invalidated)
        } else {
            #expect(live == old)
            #expect(string(try reopened.secret(service: "s", account: "current", proof: finger)) == "current")
        }
        #expect(string(try reopened.secret(service: "s", account: "any", proof: finger)) == "any")
        // And the next change works from there.
        try changeFingers(reopened, to: [testPrint(.rightThumb)])
        #expect(try reopened.enrolledFingers().fingers == [.rightThumb])
    }

    @Test("a change made by another process between this one's seals and its commit: this one stores nothing and says so; the other's stands")
    func concurrentChanges() throws {
        let rig = try rig()
        let other = try rig.reopen()
        let vault = try rig.reopen()
        vault.interruption = { name throws(VaultError) in
            if name == "fingers-sealed" { try changeFingers(other, to: [testPrint(.leftThumb)]) }
            if name == "passcode-sealed" { try other.changePasscode(from: rightPasscode, to: PasscodeAuth(passcodeString: "other's")) }
        }
        #expect(throws: VaultError.concurrentChange) { try changeFingers(vault, to: [testPrint(.rightThumb)]) }
        #expect(try rig.reopen().enrolledFingers().fingers == [.leftThumb])
        #expect(throws: VaultError.concurrentChange) {
            try vault.changePasscode(from: rightPasscode, to: PasscodeAuth(passcodeString: "mine"))
        }
        let opened = try rig.reopen()
        #expect(string(try opened.secret(service: "s", account: "passcode", proof: VaultProof(passcode: PasscodeAuth(passcodeString: "other's")))) == "passcode")
        #expect(throws: VaultError.tpm(.wrongPasscode)) {
            try opened.secret(service: "s", account: "passcode", proof: VaultProof(passcode: PasscodeAuth(passcodeString: "mine")))
        }
    }

    @Test("a passcode change stopped at each step: the old passcode before the commit, the new one after; never both once the vault is opened again",
          arguments: ["passcode-sealed", "passcode-committed", "passcode-incremented"])
    func passcodeChangeStopped(_ step: String) throws {
        let rig = try rig()
        let vault = try stopping(at: step, rig)
        let newPasscode = PasscodeAuth(passcodeString: "the new one")
        #expect(throws: Self.stop(step)) { try vault.changePasscode(from: rightPasscode, to: newPasscode) }
        let reopened = try rig.reopen()
        let (inForce, other) = step == "passcode-sealed" ? (rightPasscode, newPasscode) : (newPasscode, rightPasscode)
        #expect(string(try reopened.secret(service: "s", account: "passcode", proof: VaultProof(passcode: inForce))) == "passcode")
        #expect(throws: VaultError.tpm(.wrongPasscode)) {
            try reopened.secret(service: "s", account: "passcode", proof: VaultProof(passcode: other))
        }
        #expect(try reopened.pendingRoles().isEmpty)
        try changeFingers(reopened, passcode: inForce)
        try reopened.changePasscode(from: inForce, to: PasscodeAuth(passcodeString: "third"))
    }
}
