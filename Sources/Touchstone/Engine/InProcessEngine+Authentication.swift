import Foundation
import TouchstoneFingerprint
import TouchstoneTPM
import TouchstoneVault

/// Authentication: a touch matched by libfprint on this machine, the
/// passcode checked by the TPM, or both, as an access control asks; the
/// failure count in front of the TPM's lockout.
extension InProcessEngine {
    package func availability(_ policy: AuthenticationPolicy) async -> Availability {
        guard vault.isPasscodeSet else { return .passcodeNotSet }
        let biometry = await biometricAvailability()
        switch policy {
        case .deviceOwnerAuthenticationWithBiometrics: return biometry
        case .deviceOwnerAuthentication:
            if case .available = biometry { return biometry }
            return .available(.none)  // the passcode remains
        }
    }

    private func biometricAvailability() async -> Availability {
        if vault.isReadOnly { return .unavailable(reason: ReaderFailure.readOnlyVault.description) }
        do throws(VaultError) {
            if try vault.biometricFailures() >= AuthenticationContext.maximumBiometricFailures { return .lockedOut(.fingerprint) }
            if try vault.enrolledFingers().prints.isEmpty { return .notEnrolled(.fingerprint) }
        } catch {
            return .unavailable(reason: "\(error)")
        }
        do throws(FingerprintError) {
            _ = try await openReader()
        } catch {
            return .unavailable(reason: "\(error)")
        }
        return .available(.fingerprint)
    }

    package func domainState() async throws(AuthenticationError) -> Data? {
        try await authentication { () throws(BackendFailure) in try vaultCall(vault.currentDomainState()).map { Data($0) } }
    }

    package func grant(for access: AccessControl, reason: String,
                       from authenticator: any BiometricAuthenticating) async throws(AuthenticationError) -> any EngineGrant {
        // Only this device's own contexts prove anything to its vault: a
        // stand-in's success (a test double) opens nothing here.
        throw .invalidContext
    }

    package func authenticate(_ access: AccessControl, reason: String,
                              settings: ContextSettings) async throws(AuthenticationError) -> any EngineGrant {
        try await authentication { () async throws(BackendFailure) in
            InProcessGrant(try await proof(for: access, reason: reason, settings))
        }
    }

    /// A proof that satisfies `access`, obtained with a touch and/or the passcode.
    func proof(for access: AccessControl, reason: String,
                       _ settings: ContextSettings) async throws(BackendFailure) -> VaultProof {
        guard vault.isPasscodeSet else { throw .authentication(.passcodeNotSet) }
        let interaction = settings.interaction
        if settings.interactionNotAllowed || interaction == nil && access.allowsPasscode && !access.needsBiometry {
            throw .authentication(.notInteractive)
        }
        if access.combination == .all && access.needsBiometry && access.allowsPasscode {
            try await matchFinger(reason: reason, passcodeAllowed: false, settings)
            return try await askPasscode(reason: reason, settings).addingBiometricMatch()
        }
        if access.needsBiometry {
            // The live set, read once for the decision and the match. A
            // fingers' store found altered leaves the passcode, where the
            // access allows it; where it does not, the match reports it.
            let enrolled = vault.isReadOnly ? nil
                : access.allowsPasscode ? try? vault.enrolledFingers() : try vaultCall(vault.enrolledFingers())
            let biometryUsable: Bool
            if vault.isReadOnly {
                biometryUsable = false
            } else {
                let failures = try vaultCall(vault.biometricFailures())
                biometryUsable = failures < AuthenticationContext.maximumBiometricFailures && !(enrolled?.prints.isEmpty ?? true)
            }
            if biometryUsable || !access.allowsPasscode {
                do throws(BackendFailure) {
                    if try await matchFinger(reason: reason, passcodeAllowed: access.allowsPasscode, settings, enrolled: enrolled) {
                        return VaultProof(biometricMatch: true)
                    }
                } catch {
                    // No usable reader (none, busy): the passcode remains,
                    // as deviceOwnerAuthentication falls back on iOS.
                    guard access.allowsPasscode && Self.isUnavailable(error) else { throw error }
                }
            }
        }
        // The passcode: the only way in, the fallback chosen, or biometry
        // locked out / not enrolled with the passcode allowed.
        return try await askPasscode(reason: reason, settings)
    }

    private static func isUnavailable(_ failure: BackendFailure) -> Bool {
        if case .biometryNotAvailable = AuthenticationError(failure) { return true }
        return false
    }

    /// Waits for a touch. Returns true on a match, false when the person
    /// asked for the passcode (allowed); throws otherwise.
    /// `enrolled`: the live set, when the caller just read it.
    @discardableResult
    private func matchFinger(reason: String, passcodeAllowed: Bool, _ settings: ContextSettings,
                             enrolled known: EnrolledFingers? = nil) async throws(BackendFailure) -> Bool {
        if vault.isReadOnly { throw .readerUnavailable(.readOnlyVault) }
        if try vaultCall(vault.biometricFailures()) >= AuthenticationContext.maximumBiometricFailures {
            throw .authentication(.biometryLockout)
        }
        // The live set, checked against the TPM's enrolment counter: only
        // prints an enrolment stored can match.
        let enrolled: EnrolledFingers
        if let known { enrolled = known } else { enrolled = try vaultCall(vault.enrolledFingers()) }
        if enrolled.prints.isEmpty { throw .authentication(.biometryNotEnrolled) }
        let touches = try vaultCall(vault.matchingTouches())
        let session = try await readerCall(await openReader())
        let interaction = settings.interaction
        // Scan events come on libfprint's thread; the interaction gets
        // them in order, awaited, on its own isolation.
        let (events, continuation) = AsyncStream.makeStream(of: ScanEvent.self)
        let delivery = Task { for await event in events { await interaction?.scanEvent(event) } }
        defer {
            continuation.finish()
            delivery.cancel()
        }
        // With two touches, the second must match the finger the first did;
        // the person is told (before the prompt for it) and the prompt
        // says which touch it waits for.
        var candidates = enrolled.prints
        for touch in 1...touches.rawValue {
            let prompt = touch == 1 ? reason : "\(reason) (touch \(touch) of \(touches.rawValue): the same finger again)"
            switch try await touchOutcome(on: session, among: candidates, reason: prompt, passcodeAllowed: passcodeAllowed,
                                          settings, events: continuation) {
            case .matched(let finger) where touch < touches.rawValue:
                candidates = candidates.filter { $0.finger == finger }
                await interaction?.scanEvent(.touchAgain(matched: touch, total: touches.rawValue))
            case .matched:
                break
            case .noMatch:
                let failures = try vaultCall(vault.recordBiometricFailure())
                throw .authentication(failures >= AuthenticationContext.maximumBiometricFailures ? .biometryLockout
                                                                                                  : .authenticationFailed)
            case .fallback:
                guard passcodeAllowed else { throw .authentication(.userFallback) }
                return false
            }
        }
        try vaultCall(vault.resetBiometricFailures())
        return true
    }

    private enum TouchOutcome: Sendable {
        case matched(Finger)
        case noMatch
        case fallback
    }

    /// One touch: the first of the touch (matched against `prints`, or
    /// not) and the person's asking for the passcode; each task's failure
    /// read where it arises.
    private func touchOutcome(on session: ReaderSession, among prints: [EnrolledPrint], reason: String,
                              passcodeAllowed: Bool, _ settings: ContextSettings,
                              events: AsyncStream<ScanEvent>.Continuation) async throws(BackendFailure) -> TouchOutcome {
        let interaction = settings.interaction
        let timeout = settings.touchTimeout
        let first = await withTaskGroup(of: Result<TouchOutcome, BackendFailure>.self,
                                        returning: Result<TouchOutcome, BackendFailure>?.self) { group in
            group.addTask {
                do throws(FingerprintError) {
                    let finger = try await session.match(among: prints, timeout: timeout) { events.yield($0) }
                    return .success(finger.map(TouchOutcome.matched) ?? .noMatch)
                } catch {
                    return .failure(BackendFailure(reader: error))
                }
            }
            if let interaction {
                group.addTask {
                    await interaction.waitForPasscodeRequest(reason: reason, passcodeAllowed: passcodeAllowed)
                    return Task.isCancelled ? .failure(.cancelled) : .success(.fallback)
                }
            }
            defer { group.cancelAll() }
            return await group.next()
        }
        guard let first else { throw .cancelled }
        return try first.get()
    }

    /// Asks for the passcode and has the TPM check it. A success clears the
    /// biometric failure count and lockout.
    private func askPasscode(reason: String, _ settings: ContextSettings) async throws(BackendFailure) -> VaultProof {
        guard let interaction = settings.interaction, !settings.interactionNotAllowed else {
            throw .authentication(.notInteractive)
        }
        // Daemon mode: refused at once while the user is throttled.
        if let daemon { _ = try await authenticationCall(daemon.throttle.check()) }
        let typed = try await authenticationCall(await interaction.passcode(reason: reason))
        let judgement = try await authenticationCall(admitTyped(typed))
        let auth = PasscodeAuth(passcode: typed)
        // Daemon mode: the user's last right passcode, warm, proves itself
        // with the key the TPM opened for it, while its record is unchanged.
        if let warm, let kept = warm.opened(for: typed),
           let proof = try vaultCall(vault.passcodeProof(auth, opened: kept.secret, record: kept.record)) {
            try vaultCall(vault.resetBiometricFailures())
            settle(judgement, passcode: typed, right: true)
            return proof
        }
        let proof: VaultProof
        do throws(VaultError) {
            proof = try vault.verifyPasscode(auth)
        } catch {
            let failure = BackendFailure(vault: error)
            if case .authenticationFailed = AuthenticationError(failure) {
                settle(judgement, passcode: typed, right: false)
            } else {
                settle(judgement, passcode: typed, right: nil)
            }
            throw failure
        }
        settle(judgement, passcode: typed, right: true)
        try vaultCall(vault.resetBiometricFailures())
        if let warm, let secret = try vaultCall(vault.openedPasscodeKey(in: proof)) {
            warm.remember(typed, secret: secret, record: try vaultCall(vault.passcodeKeyRecord()))
        }
        return proof
    }
}

/// The in-process engine's grant: the vault's proof.
struct InProcessGrant: EngineGrant {
    let proof: VaultProof

    init(_ proof: VaultProof) { self.proof = proof }

    func satisfies(_ access: AccessControl) -> Bool {
        access.alternatives.contains { alternative in
            alternative.allSatisfy { flag in flag == .devicePasscode ? proof.passcode != nil : proof.biometricMatch }
        }
    }
}
