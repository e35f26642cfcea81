import Foundation
import Glibc
import Touchstone
import TouchstoneDBus

/// The reader and the vault, as `status` finds them (through the daemon
/// when it is the engine).
extension Doctor {
    // MARK: reader

    func reader(_ status: Status) async -> DoctorCheck {
        if let failure = status.daemonFailure { return unknownThroughDaemon(.reader, failure) }
        let reader = status.reader
        let whose = daemonSocket == nil ? "" : "touchstoned's: "
        // fprintd takes real readers for logins and lock screens; the
        // simulated reader is only ever touchstone's.
        let fprintd = configuration.reader == .simulator ? nil : await Self.fprintd(environment)
        if reader.available {
            // A real reader is listed, not opened: whether a program holds
            // it shows only when one opens it.
            var detail = whose + "\(reader.name ?? "a reader") (\(reader.id ?? reader.selection)), "
                + (configuration.reader == .simulator ? "free" : "found")
            if let fprintd {
                detail += "; fprintd runs (\(fprintd)) and holds the reader while a login or lock-screen prompt asks for a finger"
            }
            return .ok(.reader, detail)
        }
        let reason = reader.reason ?? "not known"
        let detail = whose + reason + (fprintd.map { "; fprintd runs (\($0))" } ?? "")
        return .problem(.reader, detail, fix: readerFix(reason, fprintd: fprintd))
    }

    /// What to do about a reader that is not available for `reason`.
    private func readerFix(_ reason: String, fprintd: String?) -> String {
        let simulated = configuration.reader == .simulator
        if simulated, !configuration.simulator.status.running { return "touchstone sim start" }
        if reason.hasPrefix("busy") {
            if simulated { return "wait for the other touchstone command that has the simulated reader to finish, or cancel it" }
            return fprintd == nil
                ? "end the program that has the reader open"
                : "finish or cancel the login or lock-screen prompt that uses it, or stop fprintd while you use touchstone: sudo systemctl stop fprintd"
        }
        if case .id = configuration.reader {
            return "'touchstone --reader auto status' lists the reader libfprint finds; give its id with --reader (TOUCHSTONE_READER), or leave --reader out"
        }
        if reason.hasPrefix("no fingerprint reader") {
            return "plug in a reader that libfprint supports (fprint.freedesktop.org/supported-devices.html); without one, try the simulator: touchstone sim start, then --sim"
        }
        return "'touchstone status' shows what libfprint says of the reader; docs/fingerprint.md lists what readers need"
    }

    /// fprintd, named by its program, when it owns its name on the system
    /// bus; nil when it does not run or there is no system bus.
    static func fprintd(_ environment: [String: String]) async -> String? {
        let standard = "/run/dbus/system_bus_socket"
        let address = environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=" + standard
        if environment["DBUS_SYSTEM_BUS_ADDRESS"] == nil, access(standard, F_OK) != 0 { return nil }
        guard let bus = try? await DBusBus(address: address) else { return nil }
        let owner = await bus.owner(of: "net.reactivated.Fprint")
        await bus.close()
        return owner.map { $0.program?.description ?? "bus name \($0.uniqueName)" }
    }

    // MARK: vault

    func vault(_ status: Status) -> DoctorCheck {
        if let failure = status.daemonFailure { return unknownThroughDaemon(.vault, failure) }
        guard status.vault.available else {
            let reason = status.vault.reason ?? "not known"
            if !status.tpm.available { return .problem(.vault, "not open: \(reason)", fix: "make the TPM reachable first (the tpm check)") }
            let hint = status.problem.flatMap { translation.device($0).hint }
            return .problem(.vault, "not open: \(reason)",
                            fix: hint ?? "docs/reliability.md says what each damage means and what to do; the vault was left as it is")
        }
        let items = status.items.map { "\($0) item\($0 == 1 ? "" : "s")" } ?? "items not known"
        guard status.passcodeSet == true else {
            return .problem(.vault, "no passcode set (\(items)): only items with access none can be stored, and no finger can be enrolled",
                            fix: touchstone("passcode set"))
        }
        if let problem = status.fingersProblem {
            return .problem(.vault, "no finger can match: \(problem.description)",
                            fix: touchstone("unenroll --all") + ", then " + touchstone("enroll"))
        }
        guard !status.fingers.isEmpty else {
            return .problem(.vault, "passcode set, no finger enrolled (\(items)): items that need a finger cannot be opened",
                            fix: touchstone("enroll right-index-finger"))
        }
        if status.biometryLockout == true {
            return .problem(.vault, "biometry locked out after \(status.failedAttempts ?? AuthenticationContext.maximumBiometricFailures) failed matches: until the passcode is given, no finger opens anything",
                            fix: touchstone("verify --allow-passcode") + " (the passcode clears the lockout)")
        }
        let fingers = status.fingers.map(\.fprintdName).joined(separator: ", ")
        return .ok(.vault, "passcode set; fingers: \(fingers); \(items)" + (daemonSocket == nil ? " in \(status.home)" : " (touchstoned's state: \(status.home))"))
    }
}
