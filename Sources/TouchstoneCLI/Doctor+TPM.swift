import Foundation
import Glibc
import Touchstone

/// The TPM: reachable through the configured TCTI; for a device TCTI, its
/// node there and open to this user; not in dictionary-attack lockout.
extension Doctor {
    func tpm(_ status: Status) -> DoctorCheck {
        if let failure = status.daemonFailure { return unknownThroughDaemon(.tpm, failure) }
        let tpm = status.tpm
        // Through a daemon the TPM is the daemon's: this user needs no
        // access to it (docs/daemon.md).
        if daemonSocket == nil, case .tcti(let tcti) = configuration.tpm, let node = Self.deviceNode(tcti),
           let problem = Self.nodeProblem(node) {
            return problem
        }
        guard tpm.available else {
            return .problem(.tpm, (daemonSocket == nil ? "" : "touchstoned's: ") + "not reachable through \(tpm.tcti): \(tpm.reason ?? "not known")",
                            fix: unreachableFix(status))
        }
        let tries = tpm.failedTries.map { failed in "\(failed) of \(tpm.maxTries.map(String.init) ?? "?") failed passcode tries" }
        let reached = (daemonSocket == nil ? "" : "touchstoned's: ") + "reachable through \(tpm.tcti)"
        if tpm.lockedOut == true {
            return .problem(.tpm, reached + ", in dictionary-attack lockout" + (tries.map { " (\($0))" } ?? "") + ": no passcode is checked until it ends",
                            fix: "wait: the TPM gives one try back after each recovery interval (a command that needs the passcode says when, exit 12); "
                                + "or clear it with the TPM's lockout authorization: tpm2_dictionarylockout --clear-lockout" + (options.tpm == .simulator ? " -T \(configuration.simulator.tcti)" : ""))
        }
        return .ok(.tpm, reached + (tries.map { "; not in dictionary-attack lockout (\($0))" } ?? ""))
    }

    /// What to do about a TPM that did not answer.
    private func unreachableFix(_ status: Status) -> String {
        if options.tpm == .simulator { return daemonSocket == nil ? "touchstone sim start" : "touchstone sim start --daemon" }
        if daemonSocket != nil {
            return "touchstoned's user needs /dev/tpmrm0 (group tss, docs/daemon.md); journalctl -u touchstoned says what it met"
        }
        if case .tcti(let tcti) = configuration.tpm, tcti.hasPrefix("swtpm:") || tcti.hasPrefix("mssim:") {
            return "start the TPM simulator that listens there, or point --tpm (TOUCHSTONE_TPM) at another TPM (default device:/dev/tpmrm0)"
        }
        if case .tpm(let failure)? = status.problem, failure.kind == .otherTPM {
            return "this state folder's keys were sealed by another TPM (or this one was cleared): use another --home (TOUCHSTONE_HOME) for this TPM"
        }
        return "dmesg | grep -i tpm says what the kernel found; --tpm (TOUCHSTONE_TPM) names another TPM (default device:/dev/tpmrm0)"
    }

    /// The device node of a `device:PATH` TCTI, nil for other TCTIs.
    static func deviceNode(_ tcti: String) -> String? {
        guard tcti.hasPrefix("device:") else { return nil }
        let path = String(tcti.dropFirst("device:".count))
        return path.isEmpty ? nil : path
    }

    /// What is wrong with the TPM's device node at `path` for this user,
    /// nil when it is there and this user may read and write it.
    static func nodeProblem(_ path: String) -> DoctorCheck? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let kernelNode = path == "/dev/tpmrm0"
            guard kernelNode else {
                return .problem(.tpm, "no \(path): the --tpm (TOUCHSTONE_TPM) TCTI device:\(path) points nowhere",
                                fix: "point --tpm (TOUCHSTONE_TPM) at the TPM: device:/dev/tpmrm0, the kernel's resource manager, is the default")
            }
            let raw = access("/dev/tpm0", F_OK) == 0
                ? "there is /dev/tpm0 but no /dev/tpmrm0 (the kernel's resource manager): a TPM 1.2, or a kernel older than 4.12"
                : "no /dev/tpmrm0: the kernel found no TPM 2.0"
            return .problem(.tpm, raw,
                            fix: "turn the TPM 2.0 on in the firmware setup (Intel PTT, AMD fTPM, or a discrete TPM) and boot again; without one, try the simulator: touchstone sim start, then --sim")
        }
        guard access(path, R_OK | W_OK) != 0 else { return nil }
        let user = ProcessInfo.processInfo.userName
        let group = getgrgid(info.st_gid).map { String(cString: $0.pointee.gr_name) } ?? "\(info.st_gid)"
        let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "\(info.st_uid)"
        let detail = "\(path) (mode \(String(info.st_mode & 0o777, radix: 8)), \(owner):\(group)) is not readable and writable by \(user)"
        if Self.isMember(user, ofGroup: info.st_gid), !Self.sessionHasGroup(info.st_gid) {
            return .problem(.tpm, detail + ": you joined group \(group) after this session started",
                            fix: "log out and in again (or, in this shell: newgrp \(group))")
        }
        let rule = "/etc/udev/rules.d/70-touchstone.rules"
        let join = "sudo usermod -aG \(group) \(user), then log out and in again"
        if access(rule, F_OK) == 0 {
            return .problem(.tpm, detail + "; Touchstone's udev rule (\(rule)) gives it only to the user at the local seat",
                            fix: "sudo udevadm trigger --subsystem-match=tpmrm (from the seat's session); from any session: \(join)")
        }
        return .problem(.tpm, detail,
                        fix: "\(join); or, for the user at the local seat, install Touchstone's udev rule udev/70-touchstone.rules as \(rule) "
                            + "(sudo udev/install does it; udev/README.md) and run sudo udevadm trigger --subsystem-match=tpmrm")
    }

    /// Whether `user` is a member of group `gid` in the group database.
    private static func isMember(_ user: String, ofGroup gid: gid_t) -> Bool {
        guard let entry = getpwnam(user) else { return false }
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(user, entry.pointee.pw_gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(user, entry.pointee.pw_gid, &groups, &count) >= 0 else { return false }
        }
        return groups.prefix(Int(count)).contains(gid)
    }

    /// Whether this process has group `gid` (its own or a supplementary one).
    private static func sessionHasGroup(_ gid: gid_t) -> Bool {
        if getegid() == gid { return true }
        let count = getgroups(0, nil)
        guard count > 0 else { return false }
        var groups = [gid_t](repeating: 0, count: Int(count))
        let filled = getgroups(count, &groups)
        return filled > 0 && groups.prefix(Int(filled)).contains(gid)
    }
}
