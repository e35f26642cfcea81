import TouchstoneSimulator
import Foundation
import TestRigs
import TouchstoneTPM

/// The benchmark's own swtpm is the test rigs' (a fresh state folder made
/// with mkdtemp under /tmp, unix sockets); the rig deletes the folder when
/// it goes.
extension SwtpmRig {
    /// A started rig, once swtpm is known to be installed.
    static func forBenchmark() throws -> SwtpmRig {
        guard Swtpm.which("swtpm") != nil else { throw BenchError.missingTool(name: "swtpm", package: "swtpm") }
        return try SwtpmRig()
    }

    /// A folder inside the private one (mode 0700) for the tool run's files.
    func subdirectory(_ name: String) throws -> String {
        let path = directory + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        return path
    }

    /// Stops swtpm cleanly (TPM2_Shutdown, then SIGTERM by PID). Reports,
    /// but survives, a swtpm that will not stop (its PID is in the message).
    func stopReporting() {
        do {
            try swtpm.stop()
        } catch {
            FileHandle.standardError.write(Data("touchstone-bench: \(error)\n".utf8))
        }
    }
}
