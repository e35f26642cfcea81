import Foundation
import TouchstoneTPM

/// The benchmark's own swtpm: a fresh state folder made with mkdtemp under
/// /tmp (unix socket paths must stay short), started on unix sockets, and at
/// the end shut down (TPM2_Shutdown, then SIGTERM by PID) and deleted.
final class PrivateSwtpm {
    let swtpm: Swtpm
    let directory: String

    var tcti: String { swtpm.tcti }

    init() throws {
        guard Swtpm.which("swtpm") != nil else { throw BenchError.missingTool(name: "swtpm", package: "swtpm") }
        var template = Array("/tmp/ts-bench-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchError.setup("mkdtemp under /tmp: \(String(cString: strerror(errno)))")
        }
        directory = String(cString: made)
        swtpm = Swtpm(directory: directory)
        do {
            try swtpm.start()
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// A folder inside the private one (mode 0700) for the tool run's files.
    func subdirectory(_ name: String) throws -> String {
        let path = directory + "/" + name
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        return path
    }

    /// Stops swtpm cleanly and deletes its folder. Reports, but survives, a
    /// swtpm that will not stop (its PID is in the message).
    func stopAndRemove() {
        do {
            try swtpm.stop()
        } catch {
            FileHandle.standardError.write(Data("touchstone-bench: \(error)\n".utf8))
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
