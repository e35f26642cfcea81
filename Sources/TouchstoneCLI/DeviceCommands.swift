import Foundation
import Touchstone
import TouchstoneCommandLine
import TouchstoneFingerprint
import TouchstoneTPM
import TouchstoneVault

/// status, passcode, enroll, unenroll, fingers, verify.
extension Session {
    // MARK: status

    /// Reports without prompting. Exit 0 when the report is complete, 11
    /// when the TPM could not be reached (the report still prints).
    func status() async throws {
        var report = StatusReport(
            home: options.home,
            reader: await readerStatus(),
            tpm: StatusReport.TPMState(available: false, tcti: options.tpm.description),
            fingers: [])
        var failure: CLIFailure?
        do {
            let device = try openDevice()
            report.vault.available = true
            Self.describe(into: &report.tpm, device.tpm, tcti: device.configuration.tcti)
            report.passcodeSet = device.isPasscodeSet
            report.fingers = try device.enrolledFingers().map(\.fprintdName)
            let failures = try device.vault.biometricFailures()
            report.failedAttempts = failures
            report.biometryLockout = failures >= AuthenticationContext.maximumBiometricFailures
            report.items = try device.vault.itemCount()
        } catch {
            let translated = translation.failure(for: error)
            if translated.code == .cancelled { throw translated }
            report.vault.available = false
            if translated.code == .tpmFailed || translated.code == .tpmLockout {
                report.tpm.available = false
                report.tpm.reason = translated.message
                report.vault.reason = "it needs the TPM"
            } else {
                // The vault (or what comes before it) failed, not
                // necessarily the TPM: asked on its own if not yet.
                report.vault.reason = translated.message
                if !report.tpm.available {
                    if let tcti = try? configuration().tcti, let tpm = try? TPM(tcti: tcti) {
                        Self.describe(into: &report.tpm, tpm, tcti: tcti)
                    } else {
                        report.tpm.reason = "not reached (\(translated.message))"
                    }
                }
            }
            failure = translated
        }
        if options.json { try Output.json(report) } else { Output.result(report.text) }
        if let failure { throw failure }
    }

    /// The TPM's part of the report: reachable, and its dictionary-attack state.
    private static func describe(into state: inout StatusReport.TPMState, _ tpm: TPM, tcti: String) {
        state.tcti = tcti
        state.available = true
        if let lockout = try? tpm.dictionaryAttackState() {
            state.lockedOut = lockout.isLockedOut
            state.failedTries = lockout.failedTries
            state.maxTries = lockout.maxTries
        }
    }

    /// Whether the chosen reader is there and free, found without opening
    /// it (so without prompting and without taking it from anyone).
    private func readerStatus() async -> StatusReport.Reader {
        var status = StatusReport.Reader(available: false, selection: options.reader.description)
        let backend: LibfprintReader
        switch options.reader {
        case .simulator:
            if (try? simulator.checkPaths()) == nil {
                status.reason = "the state directory is too deep for the simulator's sockets"
                return status
            }
            backend = LibfprintReader(virtualReaders: .init(device: simulator.readerSocket))
        case .automatic, .id: backend = LibfprintReader()
        }
        await Self.describe(into: &status, backend, options.reader, simulator)
        await backend.close()
        return status
    }

    /// Fills in which reader `selection` finds and whether it is free.
    private static func describe(into status: inout StatusReport.Reader, _ backend: LibfprintReader,
                                 _ selection: TouchstoneCommandLine.ReaderSelection, _ simulator: SimulatorLayout) async {
        do {
            let readers = try await backend.readers()
            let chosen: ReaderInfo?
            switch selection {
            case .simulator: chosen = readers.first { $0.driver == "virtual_device" }
            case .automatic: chosen = readers.first
            case .id(let id): chosen = readers.first { $0.identity.description == id || $0.deviceID == id }
            }
            guard let reader = chosen else {
                status.reason = readers.isEmpty ? "no fingerprint reader found" : "no reader \(selection.description)"
                return
            }
            status.id = reader.identity.description
            status.name = reader.name
            if selection == .simulator, isClaimed(simulator.readerSocket) {
                status.reason = "busy: another touchstone process has it open"
                return
            }
            status.available = true
        } catch {
            status.reason = "\(error)"
        }
    }

    /// Whether another process holds the simulated reader's claim.
    private static func isClaimed(_ socket: String) -> Bool {
        let fd = Glibc.open(socket + ".lock", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return errno == EWOULDBLOCK }
        flock(fd, LOCK_UN)
        return false
    }

    // MARK: passcode

    func passcode(_ action: Command.PasscodeAction) async throws {
        let device = try openDevice()
        switch action {
        case .set:
            guard !device.isPasscodeSet else { throw translation.vault(.passcodeAlreadySet) }
            let passcode = try await asking { try await passcodes.newPasscode(what: "New passcode") }
            try translating { try device.setPasscode(passcode) }
            Output.progress("passcode set")
        case .change:
            guard device.isPasscodeSet else { throw translation.vault(.passcodeNotSet) }
            let current = try await asking { try await passcodes.next(prompt: "Current passcode: ") }
            let new = try await asking { try await passcodes.newPasscode(what: "New passcode") }
            try translating { try device.changePasscode(from: current, to: new) }
            Output.progress("passcode changed")
        case .remove:
            guard device.isPasscodeSet else { throw translation.vault(.passcodeNotSet) }
            let current = try await asking { try await passcodes.next(prompt: "Passcode: ") }
            let deleted = try await translatingAsync { try await device.removePasscode(current) }
            Output.progress("passcode removed: every finger unenrolled; \(deleted) item(s) kept only while a passcode is set were deleted")
        }
    }

    // MARK: fingers

    func enroll(_ name: FingerName) async throws {
        let device = try openDevice()
        guard device.isPasscodeSet else { throw translation.vault(.passcodeNotSet) }
        let finger = try Self.finger(name)
        let passcode = try await asking { try await passcodes.next(prompt: "Passcode: ") }
        Output.progress("Enrolling \(finger.fprintdName): touch the reader several times, lifting the finger in between (Ctrl-C: cancel)")
        try await translatingAsync {
            try await device.enroll(finger, passcode: passcode, timeout: options.timeout) { event in
                switch event {
                case .stage(let completed, let total): Output.progress("Touch \(completed) of \(total)")
                case .retry(let hint): Output.progress("  \(hint.message)")
                }
            }
        }
        Output.progress("\(finger.fprintdName) enrolled")
    }

    func unenroll(_ target: Command.UnenrollTarget) async throws {
        let device = try openDevice()
        guard device.isPasscodeSet else { throw translation.vault(.passcodeNotSet) }
        let enrolled = try translating { try device.enrolledFingers() }
        guard !enrolled.isEmpty else { throw translation.authentication(.biometryNotEnrolled) }
        var finger: Finger?
        if case .finger(let name) = target {
            finger = try Self.finger(name)
            guard enrolled.contains(finger!) else {
                throw CLIFailure(.failure, "\(name.rawValue) is not enrolled",
                                 hint: "enrolled: \(enrolled.map(\.fprintdName).joined(separator: ", "))")
            }
        }
        let passcode = try await asking { try await passcodes.next(prompt: "Passcode: ") }
        try await translatingAsync { try await device.unenroll(finger, passcode: passcode) }
        Output.progress(finger.map { "\($0.fprintdName) unenrolled" } ?? "every finger unenrolled")
    }

    func fingers() throws {
        let device = try openDevice()
        let names = try translating { try device.enrolledFingers() }.map(\.fprintdName)
        if options.json { try Output.json(names) } else { names.forEach(Output.result) }
    }

    func verify(allowPasscode: Bool) async throws {
        let device = try openDevice()
        let context = makeContext(device)
        let policy: AuthenticationPolicy = allowPasscode ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
        try await translatingAsync { try await context.evaluate(policy, reason: "touchstone verify: confirm it is you") }
        Output.progress("verified")
    }

    // MARK: Helpers

    static func finger(_ name: FingerName) throws -> Finger {
        guard let finger = Finger(fprintdName: name.rawValue) else {
            throw CLIFailure(.failure, "unknown finger \(name.rawValue)")
        }
        return finger
    }

    /// Runs a passcode question, its errors translated.
    func asking<T>(_ body: () async throws -> T) async throws -> T {
        try await translatingAsync(body)
    }

    func translating<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw translation.failure(for: error) }
    }

    func translatingAsync<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch { throw translation.failure(for: error) }
    }
}
