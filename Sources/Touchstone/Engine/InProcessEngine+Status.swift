import TouchstoneTPM
import TouchstoneVault

/// `status`: every part reported on its own, so that one that fails (the
/// TPM unreachable, the vault damaged) does not hide the others.
extension InProcessEngine {
    package func status() async -> Status {
        var status = Self.emptyStatus(configuration)
        if let reader {
            // This process holds it: the probe would see its own claim.
            let info = reader.session.reader
            status.reader = Status.Reader(available: true, selection: configuration.reader.description,
                                          id: info.identity.description, name: info.name)
        } else {
            status.reader = await Self.readerStatus(configuration)
        }
        return report(into: status)
    }

    /// The status of `configuration`'s device, opened for the look and
    /// closed again.
    static func status(of configuration: Configuration) async -> Status {
        var status = emptyStatus(configuration)
        status.reader = await readerStatus(configuration)
        do {
            let engine = try await open(configuration)
            status = await engine.report(into: status)
            await engine.close()
        } catch {
            status.problem = error
            if case .tpm = error {
                status.tpm.reason = error.description
                status.vault.reason = "it needs the TPM"
            } else if case .authentication(.passcodeLockout) = error {
                status.tpm.reason = error.description
                status.vault.reason = "it needs the TPM"
            } else {
                // The vault (or what comes before it) failed, not
                // necessarily the TPM: asked on its own.
                status.vault.reason = error.description
                let thread = DedicatedThread.make()
                defer { thread.recycle() }
                let reached = try? await thread.run { () throws(BackendFailure) -> Status.TPM in
                    var tpmStatus = Status.TPM(available: false, tcti: configuration.tpm.description)
                    let tcti = try Backend.tcti(configuration)
                    describe(try tpmCall(TPM(tcti: tcti)), into: &tpmStatus)
                    return tpmStatus
                }
                status.tpm = reached ?? Status.TPM(available: false, tcti: configuration.tpm.description,
                                                    reason: "not reached (\(error.description))")
            }
        }
        return status
    }

    /// The vault's part, and the TPM's.
    private func report(into status: Status) -> Status {
        var status = status
        Self.describe(tpm, into: &status.tpm)
        do throws(VaultError) {
            status.passcodeSet = vault.isPasscodeSet
            do throws(VaultError) {
                status.fingers = try vault.enrolledFingerNames()
            } catch {
                guard case .fingersTampered = error else { throw error }
                // Reported on its own: the rest of the vault is fine.
                status.fingersProblem = DeviceError(BackendFailure(vault: error))
            }
            let failures = try vault.biometricFailures()
            status.failedAttempts = failures
            status.biometryLockout = failures >= AuthenticationContext.maximumBiometricFailures
            status.items = try vault.itemCount()
            status.matchingTouches = try vault.matchingTouches()
            status.vault.available = true
        } catch {
            let problem = DeviceError(BackendFailure(vault: error))
            status.problem = problem
            status.vault.reason = problem.description
        }
        return status
    }

    private static func emptyStatus(_ configuration: Configuration) -> Status {
        Status(home: configuration.home.path,
               reader: Status.Reader(available: false, selection: configuration.reader.description),
               tpm: Status.TPM(available: false, tcti: configuration.tpm.description),
               vault: Status.Vault(available: false), fingers: [])
    }

    /// Whether the chosen reader is there and free, found without opening it.
    private static func readerStatus(_ configuration: Configuration) async -> Status.Reader {
        do throws(SimulatorError) {
            return await ReaderConnection.probe(try ReaderTarget(configuration, preparing: false),
                                                selection: configuration.reader)
        } catch {
            return Status.Reader(available: false, selection: configuration.reader.description,
                                 reason: "the state directory is too deep for the simulator's sockets")
        }
    }

    /// The TPM's part: reachable, and its dictionary-attack state.
    private static func describe(_ tpm: TPM, into state: inout Status.TPM) {
        state.tcti = tpm.tcti
        state.available = true
        if let lockout = try? tpm.dictionaryAttackState() {
            state.lockedOut = lockout.isLockedOut
            state.failedTries = lockout.failedTries
            state.maxTries = lockout.maxTries
        }
    }
}
