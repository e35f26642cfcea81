import Foundation
import Glibc
import Testing
import TouchstoneModel
import TouchstonePOSIX

/// PeerProgram names a process by its executable and command, and names
/// nothing once the process is gone.
@Suite("PeerProgram")
struct PeerProgramTests {
    @Test("a live process: its executable as the kernel resolves it and its command name; once it exited and was reaped, it is gone (its start time no longer read)")
    func namesTheLivingOnly() throws {
        let here = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let me = PeerProgram.named(pid: getpid(), pidfd: nil)
        #expect(me.executable == here)
        #expect(me.command?.isEmpty == false)
        #expect(me.description.hasPrefix(here + " ("))

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["30"]
        try child.run()
        let pid = child.processIdentifier
        let living = PeerProgram.named(pid: pid, pidfd: nil)
        #expect(living.executable == "/usr/bin/sleep" || living.executable == "/bin/sleep", "\(living)")
        #expect(living.command == "sleep")
        kill(pid, SIGKILL)
        child.waitUntilExit()
        let gone = PeerProgram.named(pid: pid, pidfd: nil)
        #expect(gone.executable == nil && gone.command == nil)
        #expect(gone.description == "a process that is gone (pid \(pid))")
    }

    @Test("the pidfd decides: a connected client's pidfd (SO_PEERPIDFD) keeps its names while it lives; once it exited, the same pidfd names nothing, whatever process has that pid by then")
    func pidfdDecides() throws {
        let folder = NSTemporaryDirectory() + "peer-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/s"
        let listener = try unixSocketListener(path, mode: 0o600, backlog: 1)
        // The client connects, then waits until this end closes.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        child.arguments = ["-c", "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.recv(1)", path]
        try child.run()
        var connection: OwnedDescriptor? = try listener.accept()
        guard let pidfd = connection!.peerPIDFD() else {
            Issue.record("no SO_PEERPIDFD (Linux 6.5)")
            return
        }
        let pid = child.processIdentifier
        let living = PeerProgram.named(pid: pid, pidfd: pidfd.rawValue)
        #expect(living.command == "python3", "\(living)")
        #expect(living.executable?.contains("python3") == true, "\(living)")

        connection = nil
        child.waitUntilExit()
        let gone = PeerProgram.named(pid: pid, pidfd: pidfd.rawValue)
        #expect(gone.command == nil && gone.executable == nil, "\(gone)")
        // Not this pidfd's process: nothing, even for a pid that lives.
        #expect(PeerProgram.named(pid: getpid(), pidfd: pidfd.rawValue).command == nil)
    }
}
