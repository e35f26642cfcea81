import Foundation
import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs
import CTSS2

@Suite("Bad blobs, other TPMs, a TPM that goes away, leaks", .offPool)
struct RobustnessTests {
    @Test("a blob sealed on one swtpm and given to another: a clear 'another TPM' error")
    func foreignTPM() throws {
        let first = try SwtpmRig()
        let second = try SwtpmRig()
        let tpm1 = try first.tpm()
        let tpm2 = try second.tpm()
        let blob = try tpm1.seal(randomKey(), policy: .passcodeOnly, passcode: rightPasscode)
        #expect(throws: TPMError.foreignBlob) { try tpm2.unseal(blob, via: .passcode(rightPasscode)) }
        // Pinned to the first TPM's storage key, the second TPM is refused outright.
        let pinned = try TPM(tcti: second.swtpm.tcti, expectedSRKName: try tpm1.storageKeyName())
        #expect(throws: TPMError.self) { try pinned.storageKeyName() }
        do { _ = try pinned.storageKeyName() } catch {
            guard case .storageKeyMismatch = error else { Issue.record("expected storageKeyMismatch, got \(error)"); return }
        }
    }

    @Test("every truncation of a serialized blob is a clear 'corrupted' error, never a crash")
    func truncated() throws {
        try withSwtpm { _, tpm in
            let bytes = try tpm.seal(randomKey(), policy: .passcodeOnly, passcode: rightPasscode).serialized()
            for length in 0..<bytes.count {
                #expect(throws: TPMError.self) { try SealedBlob(serialized: Array(bytes.prefix(length))) }
            }
            #expect(throws: TPMError.corruptedBlob(detail: "not a Touchstone sealed key")) {
                try SealedBlob(serialized: Array("junk".utf8) + bytes)
            }
        }
    }

    @Test("every single-bit flip of a serialized blob is caught")
    func bitFlips() throws {
        try withSwtpm { _, tpm in
            let bytes = try tpm.seal(randomKey(), policy: .passcodeOnly, passcode: rightPasscode).serialized()
            for position in stride(from: 0, to: bytes.count, by: 7) {
                var flipped = bytes
                flipped[position] ^= 0x10
                #expect(throws: TPMError.self) { try SealedBlob(serialized: flipped) }
            }
        }
    }

    @Test("damage inside the TPM structures (behind a valid checksum) is refused by the TPM as corrupted")
    func damagedTPMStructures() throws {
        try withSwtpm { _, tpm in
            try tpm.setDictionaryAttackParameters(maxTries: 10, recoveryTime: 600, lockoutRecovery: 0)
            let blob = try tpm.seal(randomKey(), policy: .passcodeOnly, passcode: rightPasscode)
            var privateFlipped = blob
            privateFlipped.privateArea[privateFlipped.privateArea.count - 5] ^= 0x01
            let reparsed = try SealedBlob(serialized: privateFlipped.serialized())
            do {
                _ = try tpm.unseal(reparsed, via: .passcode(rightPasscode))
                Issue.record("a damaged private area opened")
            } catch let error as TPMError {
                guard case .corruptedBlob = error else { Issue.record("expected corruptedBlob, got \(error)"); return }
            }
            var publicFlipped = blob
            publicFlipped.publicArea[publicFlipped.publicArea.count - 3] ^= 0x01
            do {
                _ = try tpm.unseal(publicFlipped, via: .passcode(rightPasscode))
                Issue.record("a damaged public area opened")
            } catch let error as TPMError {
                guard case .corruptedBlob = error else { Issue.record("expected corruptedBlob, got \(error)"); return }
            }
            var checkFlipped = blob
            checkFlipped.check[0] ^= 0xff
            #expect(throws: TPMError.corruptedBlob(detail: "the TPM returned bytes that do not match the sealed key")) {
                try tpm.unseal(checkFlipped, via: .passcode(rightPasscode))
            }
            // The TPM still works after all of that: nothing leaked.
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)).count == 32)
        }
    }

    @Test("swtpm stopped between two operations: a clear error; restarted: everything opens, nothing lost")
    func stopAndRestart() throws {
        let rig = try SwtpmRig()
        let tpm = try rig.tpm()
        let enrolled = try Enrolled(tpm)
        let key = randomKey()
        let blob = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
        #expect(try tpm.unseal(blob, via: .biometric) == key)

        rig.stop()
        do {
            _ = try tpm.unseal(blob, via: .biometric)
            Issue.record("unseal succeeded with swtpm stopped")
        } catch {
            guard case .unreachable = error else { Issue.record("expected unreachable, got \(error)"); return }
        }
        // Opening anew while it is down names swtpm.
        do {
            _ = try TPM(tcti: rig.swtpm.tcti)
            Issue.record("opened a stopped swtpm")
        } catch {
            guard case .unreachable(let detail) = error else { Issue.record("expected unreachable, got \(error)"); return }
            #expect(detail.contains("swtpm is not running"))
        }

        try rig.swtpm.start()
        // The same instance reconnects; the SRK, the NV index and the blob all survived.
        #expect(try tpm.unseal(blob, via: .biometric) == key)
        #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)) == key)
        #expect(try tpm.readEnrollmentState(enrolled.index) == enrolled.state)
    }

    @Test("a TCTI that points nowhere, or a missing device: clear errors")
    func badTCTI() throws {
        #expect(throws: TPMError.unreachable(detail: "no TPM device at /nonexistent/tpm (is a TPM 2.0 enabled in the firmware?)")) {
            try TPM(tcti: "device:/nonexistent/tpm")
        }
        #expect(throws: TPMError.invalidArgument("empty TCTI string (use device:/dev/tpmrm0 or swtpm:path=SOCKET)")) {
            try TPM(tcti: "")
        }
        do {
            _ = try TPM(tcti: "swtpm:path=/tmp/ts-no-such-socket")
            Issue.record("opened a socket that does not exist")
        } catch {
            guard case .unreachable = error else { Issue.record("expected unreachable, got \(error)"); return }
        }
        #expect(throws: TPMError.self) { try TPM(tcti: "nosuchtcti:whatever") }
    }

    @Test("1000 unseals in a row on one swtpm: no handle leaks (TPM_RC_OBJECT_MEMORY)")
    func thousandUnseals() throws {
        try withSwtpm { _, tpm in
            let enrolled = try Enrolled(tpm)
            let key = randomKey()
            let blob = try tpm.seal(key, policy: .biometricOrPasscode(enrolled.condition), passcode: rightPasscode)
            var failures = 0
            for i in 0..<1000 {
                let opened = try tpm.unseal(blob, via: i.isMultiple(of: 2) ? .biometric : .passcode(rightPasscode))
                if opened != key { failures += 1 }
            }
            #expect(failures == 0)
            // Failed unseals must flush too.
            try tpm.setDictionaryAttackParameters(maxTries: 1000, recoveryTime: 1, lockoutRecovery: 0)
            for _ in 0..<20 {
                #expect(throws: TPMError.wrongPasscode) { try tpm.unseal(blob, via: .passcode(wrongPasscode)) }
            }
            #expect(try tpm.unseal(blob, via: .biometric) == key)
        }
    }
}

@Suite("A process killed in the middle of an operation on the simulator", .offPool)
struct OrphanTests {
    @Test("sessions and objects left on a swtpm by a dead client are flushed, and the next unseal succeeds")
    func orphansFlushed() throws {
        try withSwtpm { rig, tpm in
            let blob = try tpm.seal(randomKey(), policy: .passcodeOnly, passcode: rightPasscode)
            // Another "process": a connection that starts sessions and never
            // flushes them, then goes away, as a killed touchstone would.
            do {
                let dead = try TCTIConnection(tcti: rig.swtpm.tcti)
                var sym = TPMT_SYM_DEF()
                sym.algorithm = ts_ALG_NULL
                var started = 0
                while started < 64 {
                    var session: ESYS_TR = ESYS_TR_NONE
                    let rc = Esys_StartAuthSession(dead.esys, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                                   ESYS_TR_NONE, nil, ts_SE_HMAC, &sym, ts_ALG_SHA256, &session)
                    if rc != ts_RC_SUCCESS { break }
                    started += 1
                }
                #expect(started >= 1, "the dead client could not start any session")
            }
            // The slots are full of orphans; the unseal flushes them and succeeds.
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)).count == 32)
            #expect(try tpm.unseal(blob, via: .passcode(rightPasscode)).count == 32)
        }
    }
}
