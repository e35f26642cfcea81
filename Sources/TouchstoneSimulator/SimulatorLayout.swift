import Foundation
import Glibc
import TouchstoneModel
import TouchstonePOSIX

/// Where the simulator lives under a state folder: `sim/tpm/` holds
/// swtpm's state, sockets, pid file and log; `sim/reader` is the virtual
/// reader's socket (with `sim/reader.lock`, its claim).
package struct SimulatorLayout: Sendable, Hashable {
    /// The longest unix socket path (sun_path holds 108 bytes with the NUL).
    package static let maximumSocketPath = 107
    /// swtpm's data socket must stay shorter than this (Swtpm's own limit).
    package static let maximumTPMSocketPath = 99

    package let home: String
    package var directory: String { home + "/sim" }
    package var swtpm: Swtpm { Swtpm(directory: directory + "/tpm") }
    package var readerSocket: String { directory + "/reader" }
    /// The image reader's synthetic master prints, one file per finger ID.
    package var fingersDirectory: String { directory + "/fingers" }
    /// Where `sim start --daemon`'s touchstoned listens.
    package var daemonSocket: String { directory + "/daemon.sock" }

    package init(home: String) {
        self.home = home.count > 1 && home.hasSuffix("/") ? String(home.dropLast()) : home
    }

    /// Refuses a state folder so deep that the sockets would not fit.
    package func checkPaths() throws(SimulatorError) {
        let tpm = swtpm
        let checks = [(tpm.socketPath, Self.maximumTPMSocketPath), (tpm.controlPath, Self.maximumSocketPath),
                      (readerSocket + ".lock", Self.maximumSocketPath)]
        for (path, limit) in checks where path.utf8.count > limit {
            throw .stateFolderTooDeep(path: path, limit: limit,
                                      longestHome: home.utf8.count - (path.utf8.count - limit))
        }
    }

    /// Creates the state folder and `sim/`, both 0700.
    package func createDirectories() throws(SimulatorError) {
        for path in [home, directory] {
            do {
                try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw .cannotCreate(path: path, reason: error.localizedDescription)
            }
        }
    }

    /// Records which virtual reader the simulator's is, beside its socket.
    package func record(_ kind: VirtualReaderKind) throws(SimulatorError) {
        let path = VirtualReaderKind.recordPath(forSocket: readerSocket)
        do {
            try Data((kind.rawValue + "\n").utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
        } catch {
            throw .cannotCreate(path: path, reason: error.localizedDescription)
        }
    }

    /// The next impression number of finger `id` for the image reader
    /// (1, 2, ...): counted in `sim/impressions`, under a lock, so that
    /// every touch is a new impression and a run of touches is the same
    /// run each time the simulator starts afresh.
    package func nextImpression(of id: String) throws(SimulatorError) -> Int {
        let path = directory + "/impressions"
        do throws(Errno) {
            let file = try OwnedDescriptor.open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode: 0o600)
            let raw = file.rawValue
            _ = try valueOrErrno(retryOnInterrupt: true) { flock(raw, LOCK_EX) }
            var bytes: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = try buffer.withUnsafeMutableBytes { chunk in
                    Result { () throws(Errno) in try file.read(into: chunk) }
                }.get()
                if count == 0 { break }
                bytes += buffer[..<count]
            }
            var counts = (try? JSONDecoder().decode([String: Int].self, from: Data(bytes))) ?? [:]
            let next = (counts[id] ?? 0) + 1
            counts[id] = next
            let encoded = (try? JSONEncoder().encode(counts)).map { [UInt8]($0) } ?? []
            _ = try valueOrErrno(retryOnInterrupt: true) { ftruncate(raw, 0) }
            _ = try valueOrErrno(retryOnInterrupt: false) { lseek(raw, 0, SEEK_SET) }
            try encoded.withUnsafeBytes { all in Result { () throws(Errno) in try file.writeAll(all) } }.get()
            try file.close()
            return next
        } catch {
            throw .cannotCreate(path: path, reason: error.description)
        }
    }
}
