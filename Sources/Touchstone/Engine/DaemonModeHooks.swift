import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// What `touchstoned` lends a user's in-process engine (daemon mode only;
/// the server module implements both): the user's passcode throttle and
/// verifier, and the user's last right passcode kept warm.
package struct DaemonModeHooks: Sendable {
    package var throttle: any PasscodeThrottle
    package var warm: any WarmPasscodeKeeping
    /// The reader as the daemon's command line chose it (`sim`, `auto`, an
    /// id), which `status` reports.
    package var readerChoice: String

    package init(throttle: any PasscodeThrottle, warm: any WarmPasscodeKeeping, readerChoice: String) {
        self.throttle = throttle
        self.warm = warm
        self.readerChoice = readerChoice
    }
}

/// One user's passcode throttle and verifier in the daemon: every passcode
/// the user gives is judged here before the TPM sees it, and its outcome
/// recorded.
package protocol PasscodeThrottle: Sendable {
    /// Throws while throttled; returns how many failures came before.
    func check() throws(AuthenticationError) -> Int
    /// Whether `passcode` is right, when the verifier knows (nil: no
    /// verifier yet; the TPM decides).
    func verify(_ passcode: SecureBytes) -> Bool?
    func recordFailure()
    /// A right passcode: failures cleared, the verifier made from it.
    func recordSuccess(_ passcode: SecureBytes)
    func clearFailures()
    /// The passcode was removed: the verifier and failures go.
    func forget()
}

/// One user's last right passcode, kept warm by the daemon.
package protocol WarmPasscodeKeeping: Sendable {
    /// The secret and record kept for `passcode`, if it is the warm one.
    func opened(for passcode: SecureBytes) -> (secret: SecureBytes, record: [UInt8])?
    func remember(_ passcode: SecureBytes, secret: SecureBytes, record: [UInt8])
    func forget()
}

extension InProcessEngine {
    /// How the daemon judged a passcode typed at a prompt, before the TPM.
    enum PasscodeJudgement {
        /// The verifier (or the warm passcode) knows it is right; `clearing`:
        /// failures came before it.
        case right(clearing: Bool)
        /// No verifier yet: the TPM's answer is recorded.
        case undecided
    }

    /// Judges a passcode typed at a prompt (daemon mode): throws while
    /// throttled or when the verifier knows it is wrong (counted). Nil in
    /// embedded mode.
    func admitTyped(_ passcode: SecureBytes) throws(AuthenticationError) -> PasscodeJudgement? {
        guard let daemon else { return nil }
        let earlier = try daemon.throttle.check()
        // The warm passcode is known right without Argon2id (the engine
        // then opens nothing with it that the TPM did not open for it).
        if daemon.warm.opened(for: passcode) != nil { return .right(clearing: earlier > 0) }
        switch daemon.throttle.verify(passcode) {
        case false?:
            daemon.throttle.recordFailure()
            throw .authenticationFailed
        case true?: return .right(clearing: earlier > 0)
        case nil: return .undecided
        }
    }

    /// Records what the TPM made of a passcode `judgement` let through.
    func settle(_ judgement: PasscodeJudgement?, passcode: SecureBytes, right: Bool) {
        guard let daemon, let judgement else { return }
        switch (judgement, right) {
        case (.undecided, true): daemon.throttle.recordSuccess(passcode)
        case (.undecided, false): daemon.throttle.recordFailure()
        case (.right(clearing: true), true): daemon.throttle.clearFailures()
        case (.right, _): break
        }
    }

    /// Runs `body`, an operation that the TPM checks `passcode` for, behind
    /// the daemon's throttle and verifier (daemon mode): refused while
    /// throttled; a passcode the verifier knows is wrong never reaches the
    /// TPM; the TPM's judgement of one it could not tell is recorded.
    func throttled<R>(_ passcode: SecureBytes, _ body: () async throws(DeviceError) -> R) async throws(DeviceError) -> R {
        guard let daemon else { return try await body() }
        let earlier: Int
        do {
            earlier = try daemon.throttle.check()
        } catch {
            throw .authentication(error)
        }
        let known = daemon.throttle.verify(passcode)
        if known == false {
            daemon.throttle.recordFailure()
            throw .authentication(.authenticationFailed)
        }
        do {
            let result = try await body()
            if known == nil { daemon.throttle.recordSuccess(passcode) } else if earlier > 0 { daemon.throttle.clearFailures() }
            return result
        } catch {
            if case .authentication(.authenticationFailed) = error, known == nil { daemon.throttle.recordFailure() }
            throw error
        }
    }
}

extension DeviceError {
    /// What a vault (or its database's) error means as a device error, for
    /// the daemon's own uses of the backends.
    package init(vault error: VaultError) { self.init(BackendFailure(vault: error)) }

    /// What a TPM error means as a device error, for the daemon's own uses
    /// of the backends.
    package init(tpm error: TPMError) { self.init(BackendFailure(tpm: error)) }
}
