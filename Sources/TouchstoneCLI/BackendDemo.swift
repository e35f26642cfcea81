import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM

/// The backend walk-through: a private swtpm and libfprint's virtual reader,
/// the same code paths a real TPM and reader take. Narrates each step on
/// stdout; never prints a key or the passcode.
///
/// Nonisolated on purpose: libfprint calls the event handlers on its own
/// thread, which must not land in MainActor-isolated closures.
enum BackendDemo {
    static func run() async -> Int32 {
        var template = Array("/tmp/touchstone-demo-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            FileHandle.standardError.write(Data("touchstone: error: cannot create a temporary folder\n".utf8))
            return 1
        }
        let directory = String(cString: made)
        let swtpm = Swtpm(directory: directory + "/tpm")
        defer {
            try? swtpm.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        do {
            try await steps(directory: directory, swtpm: swtpm)
            say("\nDone: every step behaved as designed.")
            return 0
        } catch {
            FileHandle.standardError.write(Data("touchstone: error: \(error)\n".utf8))
            return 1
        }
    }

    static func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

    struct DemoFailure: Error, CustomStringConvertible { let description: String }

    static func steps(directory: String, swtpm: Swtpm) async throws {
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

        say("3. Setting a passcode: the TPM gets an enrolment-state NV index that only the passcode can write")
        let passcode = PasscodeAuth(passcodeString: "demo passcode")
        let index = try tpm.freeEnrolmentIndex()
        try tpm.defineEnrolmentIndex(index, passcode: passcode, initialState: bytes(.random(count: 32)))
        say("   index 0x\(String(index, radix: 16)) defined")

        say("4. Enrolling right-index-finger with the simulated finger \"alice-index\"")
        try await enrol(.rightIndex, as: "alice-index", stages: reader.enrollStages, fingers, socket)
        let state1 = try currentState(fingers)
        try tpm.writeEnrolmentState(index, state: state1, passcode: passcode)
        say("   domain state written to the TPM: \(hexString(Array(state1.prefix(8))))…")

        say("5. Sealing a fresh vault key: biometric branch bound to that state, or the passcode")
        let key = SecureBytes.random(count: 32)
        let blob = try tpm.seal(key, policy: .biometricOrPasscode(BiometricCondition(nvIndex: index, domainState: state1)),
                                passcode: passcode)
        say("   sealed blob: \(blob.serialized().count) bytes, usable only by this TPM")

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

        say("8. Enrolling a second finger (left-thumb, \"alice-thumb\"): the enrolled set changes")
        try await enrol(.leftThumb, as: "alice-thumb", stages: reader.enrollStages, fingers, socket)
        let state2 = try currentState(fingers)
        try tpm.writeEnrolmentState(index, state: state2, passcode: passcode)
        say("   new domain state: \(hexString(Array(state2.prefix(8))))…")

        say("9. The key sealed for the old set no longer opens through biometry (biometry-current-set)")
        do {
            _ = try tpm.unseal(blob, via: .biometric)
            throw DemoFailure(description: "the biometric branch still opened after the enrolment changed")
        } catch TPMError.enrolmentChanged {
            say("   refused by the TPM: \(TPMError.enrolmentChanged)")
        }

        say("10. The passcode branch still opens it")
        before = tpm.commandCount
        guard try tpm.unseal(blob, via: .passcode(passcode)) == key else {
            throw DemoFailure(description: "the passcode branch returned another key")
        }
        say("   opened with the passcode (\(tpm.commandCount - before) TPM commands)")

        say("11. Stopping swtpm: TPM2_Shutdown, then the process by its PID")
        await backend.close()
        try swtpm.stop()
    }

    static func enrol(_ finger: Finger, as id: String, stages: Int, _ fingers: FingerprintEnrollment,
                      _ socket: VirtualReaderSocket) async throws {
        for _ in 0..<stages { try await socket.send("SCAN \(id)") }
        try await fingers.enroll(finger, timeout: .seconds(10)) { event in
            if case .stage(let done, let total) = event { say("   touch \(done) of \(total)") }
        }
    }

    static func currentState(_ fingers: FingerprintEnrollment) throws -> [UInt8] {
        guard let state = try fingers.domainState() else { throw DemoFailure(description: "no domain state") }
        return bytes(state)
    }

    static func bytes(_ secure: SecureBytes) -> [UInt8] { secure.withUnsafeBytes { Array($0) } }
}
