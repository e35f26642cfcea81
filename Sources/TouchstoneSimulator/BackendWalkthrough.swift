import Foundation
import TouchstoneFingerprint
import TouchstoneModel
import TouchstonePOSIX
import TouchstoneSecure
import TouchstoneTPM

/// The backend walk-through (`touchstone demo`): the TPM scheme and the
/// reader, step by step, on a private swtpm and libfprint's virtual reader
/// in a temporary folder, through the same code paths a real TPM and
/// reader take. Narrates each step; never shows a key or the passcode.
///
/// Nonisolated on purpose: libfprint calls the event handlers on its own
/// thread, which must not land in MainActor-isolated closures.
public enum BackendWalkthrough {
    /// Runs every step, narrating through `narrate`; throws
    /// `walkthroughFailed` at the first step that does not behave as designed.
    public static func run(narrate: @escaping @Sendable (String) -> Void) async throws(SimulatorError) {
        var template = Array("/tmp/touchstone-demo-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw .cannotCreate(path: "/tmp/touchstone-demo-XXXXXX", reason: Errno.current.description)
        }
        let directory = String(cString: made)
        let swtpm = Swtpm(directory: directory + "/tpm")
        defer {
            try? swtpm.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        do {
            try await steps(directory: directory, swtpm: swtpm, say: narrate)
            narrate("\nDone: every step behaved as designed.")
        } catch let error as SimulatorError {
            throw error
        } catch {
            throw .walkthroughFailed("\(error)")
        }
    }

    struct DemoFailure: Error, CustomStringConvertible { let description: String }

    static func steps(directory: String, swtpm: Swtpm, say: @escaping @Sendable (String) -> Void) async throws {
        say("1. Starting a private swtpm (state in \(swtpm.directory))")
        try swtpm.start()
        let tpm = try TPM(tcti: swtpm.tcti)
        try tpm.setDictionaryAttackParameters(maxTries: 32, recoveryTime: 10, lockoutRecovery: 10)
        say("   storage root key (ECC P-256, 0x81000001): name \(hexString(Array(try tpm.storageKeyName().prefix(10))))…")

        let socketPath = directory + "/reader"
        say("2. Opening libfprint's virtual reader (socket \(socketPath))")
        let backend = LibfprintReader(virtualReaders: .init(device: socketPath))
        defer { Task { await backend.close() } }
        guard let reader = try await backend.readers().first(where: { $0.driver == "virtual_device" }) else {
            throw DemoFailure(description: "libfprint has no virtual_device reader")
        }
        try await backend.open(reader.identity)
        let socket = VirtualReaderSocket(path: socketPath)
        let store = try FileEnrollmentStore(root: URL(fileURLWithPath: directory + "/prints"))
        let fingers = FingerprintEnrollment(backend: backend, store: store, user: "demo", reader: reader)
        say("   \(reader.name): \(reader.enrollStages) touches to enrol")

        say("3. Setting a passcode: the TPM gets an enrolment counter (an NV counter: it only ever goes up)")
        let passcode = PasscodeAuth(passcodeString: "demo passcode").salted(with: bytes(.random(count: PasscodeAuth.saltSize)))
        let counterAuth = PasscodeAuth(authValue: .random(count: PasscodeAuth.size))
        let counter = try tpm.freeCounterIndex()
        let (first, name) = try tpm.defineCounter(counter, auth: counterAuth)
        say("   counter 0x\(String(counter, radix: 16)) defined, at \(first)")

        say("4. Enrolling right-index-finger with the simulated finger \"alice-index\"")
        try await enroll(.rightIndex, as: "alice-index", stages: reader.enrollStages, fingers, socket, say: say)
        let generation = try tpm.readCounter(counter)

        say("5. Sealing a fresh vault key twice: to the counter staying at most \(generation) (biometric), and to the passcode")
        let key = SecureBytes.random(count: 32)
        let names = [counter: name]
        let blob = try tpm.seal(key, policy: .biometricOnly(BiometricCondition(counter: counter, atMost: generation)),
                                expectedNames: names)
        let passcodeBlob = try tpm.seal(key, policy: .passcodeOnly, passcode: passcode)
        say("   sealed blobs: \(blob.serialized().count) and \(passcodeBlob.serialized().count) bytes, usable only by this TPM")

        say("6. A matching touch (\"alice-index\")")
        try await socket.send("SCAN alice-index")
        guard let matched = try await fingers.verifyAny(timeout: .seconds(10)) else {
            throw DemoFailure(description: "the enrolled finger did not match")
        }
        var before = tpm.commandCount
        let opened = try tpm.unseal(blob, via: .biometric)
        guard opened == key else { throw DemoFailure(description: "the biometric branch returned another key") }
        say("   \(matched.fprintdName) matched; the TPM released the key through the biometric branch (\(tpm.commandCount - before) TPM commands)")

        say("7. A non-matching touch (\"mallory\")")
        try await socket.send("SCAN mallory")
        if try await fingers.verifyAny(timeout: .seconds(10)) != nil {
            throw DemoFailure(description: "a stranger's finger matched")
        }
        say("   no match: refused, and the TPM was never asked")

        say("8. Enrolling a second finger (left-thumb, \"alice-thumb\"): the enrolled set changes, the counter moves on")
        try await enroll(.leftThumb, as: "alice-thumb", stages: reader.enrollStages, fingers, socket, say: say)
        let next = try tpm.incrementCounter(counter, auth: counterAuth, expectedName: name)
        say("   counter at \(next)")

        say("9. The key sealed for the old set no longer opens through biometry (biometry-current-set)")
        try expectClosed(blob, tpm, say: say)

        say("10. The counter deleted and defined again (anyone with the TPM owner's empty authorization can): still closed")
        try tpm.undefineNVIndex(counter)
        let (again, sameName) = try tpm.defineCounter(counter, auth: PasscodeAuth(authValue: .random(count: PasscodeAuth.size)))
        guard again > next, sameName == name else { throw DemoFailure(description: "the counter came back at \(again)") }
        say("   defined again with the same name, it starts at \(again), past every value it had")
        try expectClosed(blob, tpm, say: say)

        say("11. The passcode blob still opens the key")
        before = tpm.commandCount
        guard try tpm.unseal(passcodeBlob, via: .passcode(passcode)) == key else {
            throw DemoFailure(description: "the passcode branch returned another key")
        }
        say("   opened with the passcode (\(tpm.commandCount - before) TPM commands)")

        say("12. Stopping swtpm: TPM2_Shutdown, then the process by its PID")
        await backend.tearDown()
        try swtpm.stop()
    }

    static func expectClosed(_ blob: SealedBlob, _ tpm: TPM, say: @escaping @Sendable (String) -> Void) throws {
        do {
            _ = try tpm.unseal(blob, via: .biometric)
            throw DemoFailure(description: "the biometric branch still opened after the enrolment changed")
        } catch TPMError.enrollmentChanged {
            say("   refused by the TPM: \(TPMError.enrollmentChanged)")
        }
    }

    static func enroll(_ finger: Finger, as id: String, stages: Int, _ fingers: FingerprintEnrollment,
                      _ socket: VirtualReaderSocket, say: @escaping @Sendable (String) -> Void) async throws {
        for _ in 0..<stages { try await socket.send("SCAN \(id)") }
        try await fingers.enroll(finger, timeout: .seconds(10)) { event in
            if case .stage(let done, let total) = event { say("   touch \(done) of \(total)") }
        }
    }

    static func bytes(_ secure: SecureBytes) -> [UInt8] { secure.withUnsafeBytes { Array($0) } }
}
