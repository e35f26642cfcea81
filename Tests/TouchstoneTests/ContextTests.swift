import Foundation
import Testing
import TestRigs
@testable import Touchstone
import TouchstoneFingerprint
import TouchstoneTestSupport

@Suite("AuthenticationContext semantics (swtpm + virtual reader)", .serialized)
struct ContextTests {
    @Test("a cancel carries no message; the fallback none; the lockout message names the passcode")
    func messages() {
        #expect(AuthenticationError.userCancel.message == nil)
        #expect(AuthenticationError.systemCancel.message == nil)
        #expect(AuthenticationError.appCancel.message == nil)
        #expect(AuthenticationError.userFallback.message == nil)
        #expect(KeychainError.userCanceled.message == nil)
        #expect(AuthenticationError.biometryLockout.message?.localizedCaseInsensitiveContains("passcode") == true)
        #expect(AuthenticationError.authenticationFailed.message != nil)
    }

    @Test("availability: no passcode, not enrolled (no biometry offered), available, locked out")
    func availability() async throws {
        let rig = try await DeviceRig(passcode: false)
        #expect(await rig.device.makeContext().canEvaluate(.deviceOwnerAuthenticationWithBiometrics) == .passcodeNotSet)
        try await rig.device.setPasscode(bytes(thePasscode))
        let fresh = rig.device.makeContext()
        #expect(await fresh.canEvaluate(.deviceOwnerAuthenticationWithBiometrics) == .notEnrolled(.fingerprint))
        #expect(await fresh.canEvaluate(.deviceOwnerAuthentication) == .available(.none))
        #expect(fresh.biometryType == .none)
        try await rig.enroll(.rightIndex, as: "a")
        let enrolled = rig.device.makeContext()
        #expect(await enrolled.canEvaluate(.deviceOwnerAuthenticationWithBiometrics) == .available(.fingerprint))
        #expect(enrolled.biometryType == .fingerprint)
        try await rig.failMatches(5)
        #expect(await rig.device.makeContext().canEvaluate(.deviceOwnerAuthenticationWithBiometrics) == .lockedOut(.fingerprint))
        // The passcode clears the lockout.
        let (context, _) = rig.context(touch: nil, passcode: thePasscode)
        try await context.evaluate(.deviceOwnerAuthentication, reason: "unlock")
        #expect(try await rig.biometricFailures() == 0)
        #expect(await rig.device.makeContext().canEvaluate(.deviceOwnerAuthenticationWithBiometrics) == .available(.fingerprint))
    }

    @Test("the failure count survives a restart; a successful match resets it")
    func failureCountPersists() async throws {
        let rig = try await DeviceRig()
        try await rig.enroll(.rightIndex, as: "a")
        try await rig.failMatches(3)
        let reopened = try await TouchstoneDevice(configuration: rig.device.configuration)
        #expect(try await reopened.withBackend { vault, _ in try vault.biometricFailures() } == 3)
        let (context, _) = rig.context(touch: "a", passcode: nil)
        try await context.evaluate(.deviceOwnerAuthenticationWithBiometrics, reason: "unlock")
        #expect(try await rig.biometricFailures() == 0)
    }

    @Test("a fresh context prompts again; within the reuse window a context does not; the window is capped at 300 s")
    func reuseWindow() async throws {
        let rig = try await DeviceRig()
        try await rig.enroll(.rightIndex, as: "a")
        for account in ["one", "two"] {
            try await rig.device.keychain.add(bytes(account), service: "s", account: account, access: .biometryAny)
        }
        let (context, person) = rig.context(touch: "a", passcode: nil)
        context.allowableReuseDuration = 60
        #expect(text(try await rig.device.keychain.get(service: "s", account: "one", context: context, reason: "r")) == "one")
        #expect(text(try await rig.device.keychain.get(service: "s", account: "two", context: context, reason: "r")) == "two")
        #expect(person.touchPrompts.withLock { $0 } == 1)
        #expect(context.holdsProof)

        let (fresh, freshPerson) = rig.context(touch: "a", passcode: nil)
        #expect(text(try await rig.device.keychain.get(service: "s", account: "one", context: fresh, reason: "r")) == "one")
        #expect(freshPerson.touchPrompts.withLock { $0 } == 1)

        // No window (the default): every read prompts.
        let (noReuse, noReusePerson) = rig.context(touch: "a", passcode: nil)
        _ = try await rig.device.keychain.get(service: "s", account: "one", context: noReuse, reason: "r")
        _ = try await rig.device.keychain.get(service: "s", account: "two", context: noReuse, reason: "r")
        #expect(noReusePerson.touchPrompts.withLock { $0 } == 2)
        // With no window nothing is kept: the proof (which holds an opened
        // class key for passcode items) went with each read.
        #expect(!noReuse.holdsProof)

        context.allowableReuseDuration = 3600
        #expect(context.allowableReuseDuration == 300)
        #expect(context.holdsProof)
        context.allowableReuseDuration = -5
        #expect(context.allowableReuseDuration == 0)
        #expect(!context.holdsProof)  // closing the window drops the kept success
    }

    @Test("invalidate(): an evaluation in flight fails with appCancel, later calls with invalidContext")
    func invalidate() async throws {
        let rig = try await DeviceRig()
        try await rig.enroll(.rightIndex, as: "a")
        let context = rig.device.makeContext()
        let waiting = WaitingPerson()
        context.interaction = waiting
        let evaluation = Task { try await context.evaluate(.deviceOwnerAuthenticationWithBiometrics, reason: "r") }
        await waiting.prompted.wait()
        let started = ContinuousClock.now
        context.invalidate()
        await #expect(throws: AuthenticationError.appCancel) { try await evaluation.value }
        #expect(ContinuousClock.now - started < .seconds(20), "a cancel, not the 30 s touch timeout")
        await #expect(throws: AuthenticationError.invalidContext) {
            try await context.evaluate(.deviceOwnerAuthentication, reason: "r")
        }
        // The reader is still usable.
        let (next, _) = rig.context(touch: "a", passcode: nil)
        try await next.evaluate(.deviceOwnerAuthenticationWithBiometrics, reason: "r")
    }

    @Test("non-interactive: anything that would prompt fails with notInteractive; 'none' items still open")
    func nonInteractive() async throws {
        let rig = try await DeviceRig()
        try await rig.enroll(.rightIndex, as: "a")
        try await rig.device.keychain.add(bytes("p"), service: "s", account: "p", access: .devicePasscode)
        try await rig.device.keychain.add(bytes("n"), service: "s", account: "n", access: .none)
        let context = rig.device.makeContext()
        context.interactionNotAllowed = true
        await #expect(throws: KeychainError.interactionNotAllowed) {
            try await rig.device.keychain.get(service: "s", account: "p", context: context, reason: "r")
        }
        await #expect(throws: AuthenticationError.notInteractive) {
            try await context.evaluate(.deviceOwnerAuthenticationWithBiometrics, reason: "r")
        }
        #expect(text(try await rig.device.keychain.get(service: "s", account: "n", context: context, reason: "r")) == "n")
    }

    @Test("biometrics-only policy: asking for the passcode is userFallback")
    func fallback() async throws {
        let rig = try await DeviceRig()
        try await rig.enroll(.rightIndex, as: "a")
        let context = rig.device.makeContext()
        context.interaction = FallbackPerson()
        await #expect(throws: AuthenticationError.userFallback) {
            try await context.evaluate(.deviceOwnerAuthenticationWithBiometrics, reason: "r")
        }
    }

    @Test("domain state: changes with each enrolment change, stable otherwise")
    func domainState() async throws {
        let rig = try await DeviceRig()
        let context = rig.device.makeContext()
        let first = try #require(try await context.domainState())
        #expect(try await context.domainState() == first)
        try await rig.enroll(.rightIndex, as: "a")
        let second = try #require(try await context.domainState())
        #expect(second != first)
        try await rig.unenroll(.rightIndex)
        #expect(try await context.domainState() != second)
    }

    @Test("enrolling needs the right passcode, checked before any touch")
    func enrollNeedsPasscode() async throws {
        let rig = try await DeviceRig()
        await #expect(throws: DeviceError.authentication(.authenticationFailed)) {
            try await rig.device.enroll(.rightIndex, passcode: bytes("nope"))
        }
        #expect(try await rig.device.enrolledFingers().isEmpty)
    }

    @Test("reading a passcode item: the TPM checks the passcode once and that unseal opens the item (at most 7 TPM commands)")
    func passcodeGetCost() async throws {
        let rig = try await DeviceRig()
        try await rig.device.keychain.add(bytes("p"), service: "s", account: "p", access: .devicePasscode)
        let (context, _) = rig.context(touch: nil, passcode: thePasscode)
        let before = try await rig.tpmCommandCount()
        #expect(text(try await rig.device.keychain.get(service: "s", account: "p", context: context, reason: "r")) == "p")
        let used = try await rig.tpmCommandCount() - before
        #expect(used <= 7, "a passcode get took \(used) TPM commands")
    }

    @Test("Codable items round-trip")
    func codable() async throws {
        struct Credentials: Codable, Equatable { var user: String; var token: String }
        let rig = try await DeviceRig()
        let value = Credentials(user: "alice", token: "t0k3n")
        try await rig.device.keychain.add(value, service: "api", account: "alice", access: .devicePasscode)
        let (context, _) = rig.context(touch: nil, passcode: thePasscode)
        #expect(try await rig.device.keychain.get(Credentials.self, service: "api", account: "alice", context: context, reason: "r") == value)
    }

    @Test("a real device's items open only through its own contexts: a stub's success, or another device's context, opens nothing")
    func foreignAuthenticatorsOpenNothing() async throws {
        let rig = try await DeviceRig()
        try await rig.enroll(.rightIndex, as: "a")
        try await rig.device.keychain.add(bytes("guarded"), service: "s", account: "g", access: .biometryAny)
        // The path works with the device's own context and a matching touch.
        #expect(try await rig.get("g", service: "s", touch: "a", passcode: nil).get() == "guarded")
        await #expect(throws: KeychainError.authentication(.invalidContext)) {
            try await rig.device.keychain.get(service: "s", account: "g", context: StubBiometrics(), reason: "r")
        }
        let other = try await DeviceRig()
        let (foreign, _) = other.context(touch: "a", passcode: nil)
        await #expect(throws: KeychainError.authentication(.invalidContext)) {
            try await rig.device.keychain.get(service: "s", account: "g", context: foreign, reason: "r")
        }
    }

    @Test("the stub double reports what it is given, for apps' own tests")
    func stub() async {
        let ok = StubBiometrics()
        #expect(await ok.availability() == .available(.fingerprint))
        let locked = StubBiometrics(reporting: .lockedOut(.fingerprint), error: .biometryLockout)
        await #expect(throws: AuthenticationError.biometryLockout) { try await locked.authenticate(reason: "r") }
    }
}

/// A person who never touches and never asks for the passcode.
final class WaitingPerson: AuthenticationInteraction, @unchecked Sendable {
    let prompted = Flag()
    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        await prompted.set()
        try? await Task.sleep(for: .seconds(3600))
    }
    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes { throw .userCancel }
}

/// A person who asks for the passcode at once.
final class FallbackPerson: AuthenticationInteraction, @unchecked Sendable {
    func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {}
    func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes { throw .userCancel }
}

/// A one-shot signal.
actor Flag {
    private var isSet = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func set() { isSet = true; waiters.forEach { $0.resume() }; waiters = [] }
    func wait() async {
        if isSet { return }
        await withCheckedContinuation { waiters.append($0) }
    }
}
