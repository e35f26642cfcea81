import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// LAContext for Linux: evaluates a policy with a finger (matched by
/// libfprint) or the passcode (checked by the TPM), and opens keychain items
/// with what it proved.
///
/// Use a fresh context per authentication. Within `allowableReuseDuration`
/// (at most 300 s) a context opens further items without another touch.
/// `invalidate()` ends it: an evaluation in flight fails with `appCancel`,
/// later calls with `invalidContext`.
public final class AuthenticationContext: @unchecked Sendable {
    // @unchecked Sendable: mutable state is guarded by `lock`.
    public static let maximumReuseDuration: TimeInterval = 300
    /// Consecutive failed matches that lock biometry until the passcode.
    public static let maximumBiometricFailures = 5
    /// Why biometry is off on a read-only vault: a failed match could not
    /// be counted, so the lockout after `maximumBiometricFailures` could
    /// not hold. The passcode (counted by the TPM) still works.
    public static let readOnlyVaultReason = "the vault is on a read-only file system, where failed matches cannot be counted"

    let device: TouchstoneDevice
    private let lock = NSLock()
    private var _interaction: (any AuthenticationInteraction)?
    private var _interactionNotAllowed = false
    private var _reuseDuration: TimeInterval = 0
    private var _touchTimeout: Duration = .seconds(30)
    private var _biometryType: BiometryType = .none
    private var invalidated = false
    private var inFlight: Task<VaultProof, any Error>?
    private var lastSuccess: (date: Date, proof: VaultProof)?

    init(device: TouchstoneDevice) { self.device = device }

    /// Prompts and passcode entry; nil: no interaction is possible.
    public var interaction: (any AuthenticationInteraction)? {
        get { lock.withLock { _interaction } }
        set { lock.withLock { _interaction = newValue } }
    }

    /// When true, anything that would prompt fails with `notInteractive`.
    public var interactionNotAllowed: Bool {
        get { lock.withLock { _interactionNotAllowed } }
        set { lock.withLock { _interactionNotAllowed = newValue } }
    }

    /// How long a success here is reused without another touch; capped at
    /// 300 s (touchIDAuthenticationAllowableReuseDuration). A success is
    /// kept (its proof holds the opened passcode class key) only while this
    /// is above 0; setting it to 0 drops one kept before.
    public var allowableReuseDuration: TimeInterval {
        get { lock.withLock { _reuseDuration } }
        set {
            lock.withLock {
                _reuseDuration = min(max(newValue, 0), Self.maximumReuseDuration)
                if _reuseDuration == 0 { lastSuccess = nil }
            }
        }
    }

    /// Whether a success is kept for reuse (tests).
    var holdsProof: Bool { lock.withLock { lastSuccess != nil } }

    /// How long to wait for a touch.
    public var touchTimeout: Duration {
        get { lock.withLock { _touchTimeout } }
        set { lock.withLock { _touchTimeout = newValue } }
    }

    /// Set by `canEvaluate`: `.fingerprint` when a reader is usable.
    public var biometryType: BiometryType { lock.withLock { _biometryType } }

    /// The enrolled-finger set's opaque state (evaluatedPolicyDomainState):
    /// it changes whenever a finger is added or removed, and never returns
    /// to an earlier value. Nil without a passcode.
    public func domainState() throws -> Data? {
        try device.vault.currentDomainState().map { Data($0) }
    }

    /// Ends the context: an evaluation in flight fails with `appCancel`;
    /// every later call fails with `invalidContext`. Wipes a reused proof.
    public func invalidate() {
        let task = lock.withLock { () -> Task<VaultProof, any Error>? in
            invalidated = true
            lastSuccess = nil
            return inFlight
        }
        task?.cancel()
    }

    // MARK: - Availability (never prompts)

    /// What `policy` can use now. Opens the reader to check it is there (no
    /// prompt); does not touch the TPM's dictionary-attack state.
    public func canEvaluate(_ policy: AuthenticationPolicy) async -> Availability {
        guard device.isPasscodeSet else { return .passcodeNotSet }
        let biometry = await biometricAvailability()
        lock.withLock { _biometryType = biometry == .available(.fingerprint) ? .fingerprint : .none }
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics: return biometry
        case .deviceOwnerAuthentication:
            if case .available = biometry { return biometry }
            return .available(.none)  // the passcode remains
        }
    }

    func biometricAvailability() async -> Availability {
        if device.vault.isReadOnly { return .unavailable(reason: Self.readOnlyVaultReason) }
        do {
            if try device.vault.biometricFailures() >= Self.maximumBiometricFailures { return .lockedOut(.fingerprint) }
            let enrollment = try await device.fingerprint()
            if try enrollment.enrolledFingers().isEmpty { return .notEnrolled(.fingerprint) }
            return .available(.fingerprint)
        } catch let error as FingerprintError {
            return .unavailable(reason: error.description)
        } catch {
            return .unavailable(reason: "\(error)")
        }
    }

    // MARK: - Evaluate

    /// Authenticates for `policy`, showing `reason`. Returns on success;
    /// throws an `AuthenticationError` otherwise.
    public func evaluate(_ policy: AuthenticationPolicy, reason: String) async throws {
        let requirement: AccessControl = policy == .deviceOwnerAuthentication ? .userPresence : .biometryAny
        _ = try await proof(for: requirement, reason: reason)
    }

    /// A proof that satisfies `access`: reused within the reuse window, or
    /// obtained with a touch and/or the passcode.
    func proof(for access: AccessControl, reason: String) async throws -> VaultProof {
        let task: Task<VaultProof, any Error> = try lock.withLock {
            guard !invalidated else { throw AuthenticationError.invalidContext }
            if let last = lastSuccess {
                if Date().timeIntervalSince(last.date) > _reuseDuration {
                    lastSuccess = nil  // expired: not kept any longer
                } else if Self.satisfies(last.proof, access) {
                    return Task { last.proof }
                }
            }
            let task = Task { try await self.authenticate(access, reason: reason) }
            inFlight = task
            return task
        }
        do {
            let proof = try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
            lock.withLock {
                inFlight = nil
                // Kept only for reuse: with no reuse window the proof (and
                // the class key it holds) goes with the caller's copy.
                if !invalidated && _reuseDuration > 0 { lastSuccess = (Date(), proof) }
            }
            return proof
        } catch {
            let cancelledByApp = lock.withLock { () -> Bool in inFlight = nil; return invalidated }
            if cancelledByApp { throw AuthenticationError.appCancel }
            if error is CancellationError { throw AuthenticationError.userCancel }
            throw error
        }
    }

    static func satisfies(_ proof: VaultProof, _ access: AccessControl) -> Bool {
        access.alternatives.contains { alternative in
            alternative.allSatisfy { flag in flag == .devicePasscode ? proof.passcode != nil : proof.biometricMatch }
        }
    }

    private func authenticate(_ access: AccessControl, reason: String) async throws -> VaultProof {
        guard device.isPasscodeSet else { throw AuthenticationError.passcodeNotSet }
        let (interaction, notAllowed) = lock.withLock { (_interaction, _interactionNotAllowed) }
        if notAllowed || interaction == nil && access.allowsPasscode && !access.needsBiometry {
            throw AuthenticationError.notInteractive
        }
        let needsAll = access.combination == .all && access.needsBiometry && access.allowsPasscode
        if needsAll {
            try await matchFinger(reason: reason, passcodeAllowed: false, interaction)
            return try await askPasscode(reason: reason, interaction).addingBiometricMatch()
        }
        if access.needsBiometry {
            let biometryUsable: Bool
            do {
                biometryUsable = try !device.vault.isReadOnly
                    && device.vault.biometricFailures() < Self.maximumBiometricFailures
                    && !device.enrolledFingers().isEmpty
            } catch let error as VaultError { throw AuthenticationError(error) }
            if biometryUsable || !access.allowsPasscode {
                do {
                    if try await matchFinger(reason: reason, passcodeAllowed: access.allowsPasscode, interaction) {
                        return VaultProof(biometricMatch: true)
                    }
                } catch AuthenticationError.biometryNotAvailable where access.allowsPasscode {
                    // No usable reader (none, busy): the passcode remains,
                    // as deviceOwnerAuthentication falls back on iOS.
                }
            }
        }
        // The passcode: the only way in, the fallback chosen, or biometry
        // locked out / not enrolled with the passcode allowed.
        return try await askPasscode(reason: reason, interaction)
    }

    /// Waits for a touch. Returns true on a match, false when the person
    /// asked for the passcode (allowed); throws otherwise.
    @discardableResult
    private func matchFinger(reason: String, passcodeAllowed: Bool,
                             _ interaction: (any AuthenticationInteraction)?) async throws -> Bool {
        let vault = device.vault
        if vault.isReadOnly { throw AuthenticationError.biometryNotAvailable(reason: Self.readOnlyVaultReason) }
        do {
            if try vault.biometricFailures() >= Self.maximumBiometricFailures { throw AuthenticationError.biometryLockout }
            if try device.enrolledFingers().isEmpty { throw AuthenticationError.biometryNotEnrolled }
        } catch let error as VaultError { throw AuthenticationError(error) }
        let enrollment: FingerprintEnrollment
        do { enrollment = try await device.fingerprint() } catch let error as FingerprintError { throw AuthenticationError(error) }
        let timeout = touchTimeout
        enum Outcome: Sendable { case matched, noMatch, fallback }
        let outcome: Outcome
        do {
            outcome = try await withThrowingTaskGroup(of: Outcome.self) { group in
                group.addTask {
                    let finger = try await enrollment.verifyAny(timeout: timeout) { interaction?.scanEvent($0) }
                    return finger == nil ? .noMatch : .matched
                }
                if let interaction {
                    group.addTask {
                        await interaction.waitForPasscodeRequest(reason: reason, passcodeAllowed: passcodeAllowed)
                        try Task.checkCancellation()
                        return .fallback
                    }
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw CancellationError() }
                return first
            }
        } catch let error as FingerprintError {
            if case .cancelled = error, Task.isCancelled { throw CancellationError() }
            throw AuthenticationError(error)
        }
        do {
            switch outcome {
            case .matched:
                try vault.resetBiometricFailures()
                return true
            case .noMatch:
                let failures = try vault.recordBiometricFailure()
                throw failures >= Self.maximumBiometricFailures ? AuthenticationError.biometryLockout
                                                                 : AuthenticationError.authenticationFailed
            case .fallback:
                guard passcodeAllowed else { throw AuthenticationError.userFallback }
                return false
            }
        } catch let error as VaultError { throw AuthenticationError(error) }
    }

    /// Asks for the passcode and has the TPM check it. A success clears the
    /// biometric failure count and lockout.
    private func askPasscode(reason: String, _ interaction: (any AuthenticationInteraction)?) async throws -> VaultProof {
        guard let interaction, !interactionNotAllowed else { throw AuthenticationError.notInteractive }
        let typed = try await interaction.passcode(reason: reason)
        do {
            let proof = try device.vault.verifyPasscode(PasscodeAuth(passcode: typed))
            try device.vault.resetBiometricFailures()
            return proof
        } catch let error as VaultError {
            throw AuthenticationError(error)
        }
    }
}
