import Foundation
import TestRigs
import Testing
@testable import Touchstone
import TouchstoneFingerprint
import TouchstoneSimulator
import TouchstoneSecure
import TouchstoneTPM

let thePasscode = "1234-correct"

func bytes(_ text: String) -> SecureBytes {
    var b = Array(text.utf8)
    return SecureBytes(consuming: &b)
}

func text(_ secret: SecureBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

/// A Touchstone device on a private swtpm and libfprint's virtual reader
/// (its own socket), with a fresh state folder. In the simulator a finger is
/// an id string: enrolling takes five touches of one id; a touch of another
/// id does not match.
final class DeviceRig: @unchecked Sendable {
    let tpmRig: SwtpmRig
    let socket: VirtualReaderSocket
    let device: TouchstoneDevice

    init(passcode: Bool = true) async throws {
        tpmRig = try SwtpmRig()
        socket = VirtualReaderSocket(path: tpmRig.directory + "/reader")
        let configuration = Configuration(home: URL(fileURLWithPath: tpmRig.directory + "/home"),
                                          tpm: .tcti(tpmRig.swtpm.tcti), reader: .virtual(socket: socket.path), user: "tester")
        // Room for the wrong-passcode cases without tripping the TPM's lockout.
        try TPM(tcti: tpmRig.swtpm.tcti).setDictionaryAttackParameters(maxTries: 100, recoveryTime: 1, lockoutRecovery: 1)
        device = try await TouchstoneDevice(configuration: configuration)
        if passcode { try await device.setPasscode(bytes(thePasscode)) }
    }

    /// The failed matches in a row, as the vault counts them.
    func biometricFailures() async throws -> Int {
        try await device.withBackend { vault, _ in try vault.biometricFailures() }
    }

    /// TPM commands the device's engine has sent so far.
    func tpmCommandCount() async throws -> Int {
        try await device.withBackend { _, tpm in tpm.commandCount }
    }

    deinit {
        // Never block here: deinit may run on a cooperative thread, and
        // waiting for a task that needs one deadlocks a 2-core machine.
        let device = self.device
        Task { await device.close() }
    }

    /// Enrols `finger` with five touches of simulated finger `id`.
    /// The enrolment's own error wins over the touches' (a failed
    /// enrolment never opens the socket they wait for).
    func enroll(_ finger: Finger, as id: String) async throws {
        let device = self.device
        let socket = self.socket
        let enrolling = Task { try await device.enroll(finger, passcode: bytes(thePasscode), timeout: .seconds(60)) }
        let touching = Task { for _ in 0..<5 { try await socket.send("SCAN \(id)", wait: .seconds(60)) } }
        do {
            try await enrolling.value
        } catch {
            // The enrolment's own error says why (not the touches' timeout).
            touching.cancel()
            throw error
        }
        try await touching.value
    }

    func unenroll(_ finger: Finger) async throws {
        try await device.unenroll(finger, passcode: bytes(thePasscode))
    }

    /// A context whose "person" touches with `touch` when a touch is awaited
    /// (nil: does not touch), and gives `passcode` when asked (nil: cancels).
    /// With no touch, the person asks for the passcode if allowed, or gives
    /// up (cancels) if not.
    func context(touch: String?, passcode: String?) -> (AuthenticationContext, Person) {
        let context = device.makeContext()
        let person = Person(socket: socket, touch: touch, passcode: passcode)
        context.interaction = person
        context.touchTimeout = .seconds(60)  // a bound for a hang, never reached by a slow machine
        return (context, person)
    }

    /// Reads an item as that person would; the result or the keychain error.
    func get(_ account: String, service: String = "table", touch: String?, passcode: String?) async -> Result<String, KeychainError> {
        let (context, person) = context(touch: touch, passcode: passcode)
        let device = self.device
        let task = Task { try await device.keychain.get(service: service, account: account, context: context, reason: "test") }
        person.task.withLock { $0 = { task.cancel() } }
        do { return .success(text(try await task.value)) } catch let error as KeychainError {
            return .failure(error)
        } catch {
            Issue.record("a keychain read threw \(error), not a KeychainError")
            return .failure(.invalidItem("\(error)"))
        }
    }

    /// `count` failed matches (a stranger's finger).
    func failMatches(_ count: Int) async throws {
        for _ in 0..<count {
            let (context, _) = context(touch: "stranger", passcode: nil)
            do {
                try await context.evaluate(.deviceOwnerAuthenticationWithBiometrics, reason: "test")
            } catch AuthenticationError.authenticationFailed {
            } catch AuthenticationError.biometryLockout {
            }
        }
    }
}

/// The scripted person at the reader.
final class Person: AuthenticationInteraction, @unchecked Sendable {
    let socket: VirtualReaderSocket
    let touch: String?
    let passcodeText: String?
    let task = Mutex<(@Sendable () -> Void)?>(nil)
    let touchPrompts = Mutex(0)
    let passcodePrompts = Mutex(0)

    init(socket: VirtualReaderSocket, touch: String?, passcode: String?) {
        self.socket = socket
        self.touch = touch
        passcodeText = passcode
    }

    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        touchPrompts.withLock { $0 += 1 }
        if let touch {
            _ = try? await socket.send("SCAN \(touch)", wait: .seconds(60))
        } else if passcodeAllowed, passcodeText != nil {
            return  // "Enter: use passcode"
        } else {
            task.withLock { $0?() }  // gives up: Ctrl-C
        }
        try? await Task.sleep(for: .seconds(3600))
    }

    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes {
        passcodePrompts.withLock { $0 += 1 }
        guard let passcodeText else { throw .userCancel }
        return bytes(passcodeText)
    }
}

/// A minimal lock-protected box (Synchronization's Mutex needs newer OS
/// availability annotations on some toolchains).
final class Mutex<Value>: @unchecked Sendable {
    private var value: Value
    private let lock = NSLock()
    init(_ value: Value) { self.value = value }
    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock(); defer { lock.unlock() }
        return try body(&value)
    }
}
