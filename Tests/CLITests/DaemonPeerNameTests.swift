import Foundation
import Glibc
import TestRigs
import Testing

/// The daemon's log names the program that called by its executable as
/// the kernel knows it, where the kernel lets the daemon read it, and
/// otherwise says the name is the program's own.
@Suite("touchstoned names its clients' programs")
struct DaemonPeerNameTests {
    @Test("a client that calls itself ssh-add (a link of that name to touchstone-cli: its command name is what it chose) is logged by its executable when the daemon is given CAP_SYS_PTRACE (as the unit gives it), read by the program namer, which alone keeps the capability: the daemon holds none; without the capability, by its own name, marked as such")
    func executableOrOwnName() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            let impostor = rig.bin + "/ssh-add"
            try FileManager.default.createSymbolicLink(atPath: impostor, withDestinationPath: rig.bin + "/touchstone-cli")
            let executable = rig.bin + "/touchstone-cli"

            // The daemon is given CAP_SYS_PTRACE: its program namer keeps
            // it, the daemon drops it (and every other).
            try rig.startDaemon(capabilities: ["sys_ptrace"])
            let daemon = try #require(rig.daemon?.pid)
            func capabilities(_ pid: pid_t) -> [String: String] {
                let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
                return Dictionary(status.split(separator: "\n").filter { $0.hasPrefix("Cap") }.map {
                    let parts = $0.split(separator: ":\t")
                    return (String(parts[0]), String(parts.last ?? ""))
                }, uniquingKeysWith: { a, _ in a })
            }
            // Every thread of the daemon's, not only its first.
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon)/task")) ?? []
            #expect(!threads.isEmpty)
            for thread in threads {
                let status = (try? String(contentsOfFile: "/proc/\(daemon)/task/\(thread)/status", encoding: .utf8)) ?? ""
                let held = status.split(separator: "\n").filter { $0.hasPrefix("CapEff") || $0.hasPrefix("CapPrm") || $0.hasPrefix("CapAmb") }
                #expect(held.count == 3 && held.allSatisfy { $0.hasSuffix("\t0000000000000000") }, "thread \(thread) kept a capability: \(held)")
            }
            let children = (try? String(contentsOfFile: "/proc/\(daemon)/task/\(daemon)/children", encoding: .utf8)) ?? ""
            let namers = children.split(separator: " ").compactMap { pid_t($0) }.filter {
                ((try? String(contentsOfFile: "/proc/\($0)/cmdline", encoding: .utf8)) ?? "").contains("--name-programs")
            }
            #expect(namers.count == 1, "children: \(children)")
            if let namer = namers.first {
                // CAP_SYS_PTRACE (bit 19) alone.
                #expect(capabilities(namer)["CapEff"] == "0000000000080000", "\(capabilities(namer))")
            }
            let named = rig.run(rig.alice, ["passcode", "set", "--passcode-fd", "0"], stdin: CLISandbox.line(DaemonRig.passcode),
                                program: impostor)
            #expect(named.code == 0, "\(named.stderr)")
            #expect(rig.daemonLog.contains("uid \(rig.alice.uid), \(executable) (ssh-add, pid "), "\(rig.daemonLog)")
            rig.stopDaemon()

            // It may not (the shipped unit): the name is the program's own, and says so.
            try rig.startDaemon()
            let unnamed = rig.run(rig.alice, ["status"], program: impostor)
            #expect(unnamed.code == 0, "\(unnamed.stderr)")
            let log = rig.daemonLog
            #expect(log.contains("uid \(rig.alice.uid), ssh-add (pid "), "\(log)")
            #expect(log.contains("a name it gave itself"), "\(log)")
            #expect(!log.contains(executable), "\(log)")
        }
    }
}
