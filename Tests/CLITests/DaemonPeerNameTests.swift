import Foundation
import Glibc
import TestRigs
import Testing

/// The daemon's log names the program that called by its executable as
/// the kernel knows it, where the kernel lets the daemon read it, and
/// otherwise says the name is the program's own.
@Suite("touchstoned names its clients' programs")
struct DaemonPeerNameTests {
    @Test("a client that calls itself ssh-add (a link of that name to touchstone-cli: its command name is what it chose) is logged by its executable when the daemon may read it (CAP_SYS_PTRACE, as a unit could give it), and by its own name, marked as such, when it may not")
    func executableOrOwnName() async throws {
        try await blockingTest {
            let rig = try DaemonRig(startDaemon: false)
            defer { rig.close() }
            let impostor = rig.bin + "/ssh-add"
            try FileManager.default.createSymbolicLink(atPath: impostor, withDestinationPath: rig.bin + "/touchstone-cli")
            let executable = rig.bin + "/touchstone-cli"

            // The daemon may read other users' executables.
            try rig.startDaemon(capabilities: ["sys_ptrace"])
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
