import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// status, passcode, enroll, unenroll, fingers, verify.
extension Session {
    // MARK: status

    /// Reports without prompting. Exit 0 when the report is complete, else
    /// the code of what stopped it (11 when the TPM could not be reached);
    /// the report prints either way.
    func status() async throws {
        let status = await TouchstoneDevice.status(of: configuration)
        if Task.isCancelled { throw CLIFailure.cancelled }
        if options.json { try Output.json(status) } else { Output.result(status.text) }
        if let problem = status.problem ?? status.fingersProblem { throw translation.device(problem) }
    }

    // MARK: passcode

    func passcode(_ action: Command.PasscodeAction) async throws {
        try await withDevice { device in try await passcode(action, device) }
    }

    private func passcode(_ action: Command.PasscodeAction, _ device: TouchstoneDevice) async throws {
        let isSet = try await device.passcodeIsSet()
        switch action {
        case .set:
            guard !isSet else { throw translation.device(.passcodeAlreadySet) }
            let passcode = try await interaction.readNewPasscode(what: "New passcode")
            try await device.setPasscode(passcode)
            Output.progress("passcode set")
        case .change:
            guard isSet else { throw translation.authentication(.passcodeNotSet) }
            let current = try await interaction.readPasscode(prompt: "Current passcode: ")
            let new = try await interaction.readNewPasscode(what: "New passcode")
            try await device.changePasscode(from: current, to: new)
            Output.progress("passcode changed")
        case .remove:
            guard isSet else { throw translation.authentication(.passcodeNotSet) }
            let current = try await interaction.readPasscode(prompt: "Passcode: ")
            let deleted = try await device.removePasscode(current)
            Output.progress("passcode removed: every finger unenrolled; \(deleted) item(s) kept only while a passcode is set were deleted")
        }
    }

    // MARK: fingers

    func enroll(_ finger: Finger) async throws {
        try await withDevice { device in
            guard try await device.passcodeIsSet() else { throw translation.authentication(.passcodeNotSet) }
            let passcode = try await interaction.readPasscode(prompt: "Passcode: ")
            Output.progress("Enrolling \(finger.fprintdName): touch the reader several times, lifting the finger in between (Ctrl-C: cancel)")
            try await device.enroll(finger, passcode: passcode, timeout: options.timeout) { event in
                Output.progress(TerminalInteraction.line(for: event))
            }
            Output.progress("\(finger.fprintdName) enrolled")
        }
    }

    func unenroll(_ target: Command.UnenrollTarget) async throws {
        try await withDevice { device in try await unenroll(target, device) }
    }

    private func unenroll(_ target: Command.UnenrollTarget, _ device: TouchstoneDevice) async throws {
        guard try await device.passcodeIsSet() else { throw translation.authentication(.passcodeNotSet) }
        var enrolled: [Finger] = []
        var storeAltered = false
        do {
            enrolled = try await device.enrolledFingers()
        } catch {
            // A fingers' store found altered: unenrolling every finger,
            // with the passcode, is how its owner starts again.
            guard target == .all, case .corrupted = error else { throw error }
            storeAltered = true
        }
        if storeAltered { return try await unenrollAll(device) }
        guard !enrolled.isEmpty else { throw translation.authentication(.biometryNotEnrolled) }
        var finger: Finger?
        if case .finger(let named) = target {
            guard enrolled.contains(named) else {
                throw CLIFailure(.failure, "\(named.fprintdName) is not enrolled",
                                 hint: "enrolled: \(enrolled.map(\.fprintdName).joined(separator: ", "))")
            }
            finger = named
        }
        let passcode = try await interaction.readPasscode(prompt: "Passcode: ")
        try await device.unenroll(finger, passcode: passcode)
        Output.progress(finger.map { "\($0.fprintdName) unenrolled" } ?? "every finger unenrolled")
    }

    private func unenrollAll(_ device: TouchstoneDevice) async throws {
        let passcode = try await interaction.readPasscode(prompt: "Passcode: ")
        try await device.unenroll(nil, passcode: passcode)
        Output.progress("every finger unenrolled")
    }

    func fingers() async throws {
        let names = try await withDevice { try await $0.enrolledFingers().map(\.fprintdName) }
        if options.json { try Output.json(names) } else { names.forEach(Output.result) }
    }

    /// `matching [--touches N]`: shows how many matching touches a
    /// biometric authentication takes, or sets it with the passcode.
    func matching(touches: Int?) async throws {
        try await withDevice { device in
            guard let touches, let wanted = MatchingTouches(rawValue: touches) else {
                let status = await device.status()
                if let problem = status.problem { throw translation.device(problem) }
                let current = status.matchingTouches ?? .one
                if options.json { try Output.json(["touches": current.rawValue]) } else { Output.result("\(current.rawValue)") }
                return
            }
            guard try await device.passcodeIsSet() else { throw translation.authentication(.passcodeNotSet) }
            let passcode = try await interaction.readPasscode(prompt: "Passcode: ")
            try await device.setMatchingTouches(wanted, passcode: passcode)
            Output.progress("biometric authentication now takes \(wanted)")
        }
    }

    func verify(allowPasscode: Bool) async throws {
        let policy: AuthenticationPolicy = allowPasscode ? .deviceOwnerAuthentication : .deviceOwnerAuthenticationWithBiometrics
        try await withDevice { device in
            try await makeContext(device).evaluate(policy, reason: "touchstone verify: confirm it is you")
        }
        Output.progress("verified")
    }
}

extension Status {
    /// The report for people, one line per part.
    var text: String {
        func known<T>(_ value: T?, _ show: (T) -> String) -> String { value.map(show) ?? "unknown" }
        let readerLine = reader.available
            ? "available: \(reader.name ?? "") (\(reader.id ?? reader.selection))"
            : "not available: \(reader.reason ?? "unknown")"
        var tpmLine = tpm.available ? "available (\(tpm.tcti))" : "not available: \(tpm.reason ?? "unknown")"
        if tpm.lockedOut == true { tpmLine += "; in dictionary-attack lockout" }
        let vaultLine = vault.available ? "open" : "not open: \(vault.reason ?? "unknown")"
        return """
            state:     \(home)
            reader:    \(readerLine)
            TPM:       \(tpmLine)
            vault:     \(vaultLine)
            passcode:  \(known(passcodeSet) { $0 ? "set" : "not set" })
            fingers:   \(fingersProblem.map { "none usable: \($0.description)" } ?? (fingers.isEmpty ? "none enrolled" : fingers.map(\.fprintdName).joined(separator: ", ")))
            biometry:  \(known(biometryLockout) { $0 ? "locked out (the passcode clears it)" : "not locked out" }), \(known(failedAttempts) { "\($0)" }) failed attempts in a row
            items:     \(known(items) { "\($0)" })
            matching:  \(known(matchingTouches) { "\($0)" })
            """
    }
}

// MARK: - import

extension Session {
    /// `import [--remove]`: the embedded vault of --home into the daemon.
    func importVault(remove: Bool) async throws {
        guard case .daemon = configuration.resolvedEngine else {
            throw CLIFailure(.failure, "import moves the embedded vault into touchstoned, and no daemon was chosen",
                             hint: "give its socket with --daemon PATH (with --sim: touchstone sim start --daemon)")
        }
        var source = configuration
        source.engine = .embedded
        let passcode = try await interaction.readPasscode(prompt: "Passcode of the vault in \(configuration.home.path): ")
        let report = try await withDevice { device in
            try await device.importEmbeddedVault(from: source, passcode: passcode, removing: remove)
        }
        if options.json {
            try Output.json(report)
            return
        }
        Output.progress("imported \(report.items) item(s) and \(report.fingers.count) finger(s) into touchstoned")
        for item in report.leftOut {
            Output.progress("left out (\(item.state.rawValue)): " + (item.attributes.map { "\($0.service) / \($0.account)" } ?? "a record that does not decrypt"))
        }
        switch report.embedded {
        case .readOnly: Output.progress("the embedded vault in \(configuration.home.path) is now read-only: it lists and opens with --embedded, and changes nothing")
        case .removed: Output.progress("the embedded vault in \(configuration.home.path) was removed")
        }
    }
}
