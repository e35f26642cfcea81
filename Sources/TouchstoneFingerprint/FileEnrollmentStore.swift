internal import CSodium
import Foundation
import Glibc
import Synchronization
import TouchstonePOSIX
import TouchstoneSecure

/// An `EnrollmentStore` in plain files:
/// `<root>/<user>/<driver>/<device id>/<finger name>.print` and `epoch`.
///
/// Directories are 0700 and files 0600; every write goes to a temporary
/// file that is fsynced and renamed over the old one, so a record is either
/// the old or the new one, never half of each. Each print record carries a
/// BLAKE2b-256 checksum of its data, so damage is reported as a corrupt
/// record for that finger instead of reaching libfprint.
///
/// Path components are escaped (anything outside `[A-Za-z0-9_-]` becomes
/// `%XX`), so user names and device ids cannot leave the root.
package final class FileEnrollmentStore: EnrollmentStore {
    /// The state directory given by the caller.
    package let root: URL
    private let lock = Mutex(())

    /// Record layout: magic, 32-byte checksum, print data.
    static let magic: [UInt8] = Array("TSP1".utf8)
    static let checksumLength = 32
    static let epochLength = 32

    /// A store rooted at `root` (created 0700 if missing; on a read-only
    /// file system a missing root is an empty store).
    package init(root: URL) throws(FingerprintError) {
        self.root = root
        try Self.makeDirectory(root.path)
    }

    package func fingers(user: String, reader: ReaderIdentity) throws(FingerprintError) -> [Finger] {
        let dir = directory(user: user, reader: reader)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        return names.compactMap { name -> Finger? in
            guard name.hasSuffix(".print") else { return nil }
            return Finger(fprintdName: String(name.dropLast(".print".count)))
        }.sorted()
    }

    package func load(_ finger: Finger, user: String, reader: ReaderIdentity) throws(FingerprintError) -> EnrolledPrint {
        let path = recordPath(finger, user: user, reader: reader)
        let bytes: [UInt8]
        do throws(Errno) {
            bytes = try lock.withLock { _ throws(Errno) in try Self.readFile(path) }
        } catch .noSuchFileOrDirectory {
            throw FingerprintError.notEnrolled(finger)
        } catch {
            throw FingerprintError.corruptRecord(finger: finger, reason: "cannot read \(path): \(error)")
        }
        let header = Self.magic.count + Self.checksumLength
        guard bytes.count >= header, Array(bytes[0..<Self.magic.count]) == Self.magic else {
            throw FingerprintError.corruptRecord(finger: finger, reason: "not a Touchstone print record")
        }
        let data = Array(bytes[header...])
        guard Array(bytes[Self.magic.count..<header]) == Self.checksum(data) else {
            throw FingerprintError.corruptRecord(finger: finger, reason: "checksum mismatch")
        }
        guard !data.isEmpty else {
            throw FingerprintError.corruptRecord(finger: finger, reason: "the record holds no print")
        }
        return EnrolledPrint(finger: finger, reader: reader, data: data)
    }

    package func save(_ print: EnrolledPrint, user: String) throws(FingerprintError) {
        guard !print.data.isEmpty else {
            throw FingerprintError.invalidPrint(finger: print.finger, reason: "the print data is empty")
        }
        let dir = directory(user: user, reader: print.reader)
        let record = Self.magic + Self.checksum(print.data) + print.data
        try lock.withLock { _ throws(FingerprintError) in
            try makeDirectories(down: dir)
            try Self.writeAtomically(record, to: recordPath(print.finger, user: user, reader: print.reader))
        }
    }

    package func remove(_ finger: Finger, user: String, reader: ReaderIdentity) throws(FingerprintError) {
        let path = recordPath(finger, user: user, reader: reader)
        try lock.withLock { _ throws(FingerprintError) in
            do throws(Errno) {
                _ = try valueOrErrno(retryOnInterrupt: false) { unlink(path) }
            } catch .noSuchFileOrDirectory {
                throw FingerprintError.notEnrolled(finger)
            } catch {
                throw FingerprintError.storage(reason: "cannot remove \(path): \(error)")
            }
            Self.syncDirectory(directory(user: user, reader: reader).path)
        }
    }

    package func epoch(user: String, reader: ReaderIdentity) throws(FingerprintError) -> SecureBytes? {
        let path = directory(user: user, reader: reader).appendingPathComponent("epoch").path
        var bytes: [UInt8]
        do throws(Errno) {
            bytes = try lock.withLock { _ throws(Errno) in try Self.readFile(path) }
        } catch .noSuchFileOrDirectory {
            return nil
        } catch {
            throw FingerprintError.storage(reason: "cannot read \(path): \(error)")
        }
        guard bytes.count == Self.epochLength else {
            secureWipe(&bytes)
            throw FingerprintError.storage(reason: "the enrolment epoch in \(path) is damaged")
        }
        return SecureBytes(consuming: &bytes)
    }

    package func setEpoch(_ epoch: SecureBytes, user: String, reader: ReaderIdentity) throws(FingerprintError) {
        precondition(epoch.count == Self.epochLength, "an epoch is \(Self.epochLength) bytes")
        let dir = directory(user: user, reader: reader)
        var bytes = epoch.withUnsafeBytes { Array($0) }
        defer { secureWipe(&bytes) }
        try lock.withLock { _ throws(FingerprintError) in
            try makeDirectories(down: dir)
            try Self.writeAtomically(bytes, to: dir.appendingPathComponent("epoch").path)
        }
    }

    // MARK: Paths

    func directory(user: String, reader: ReaderIdentity) -> URL {
        root.appendingPathComponent(Self.escape(user))
            .appendingPathComponent(Self.escape(reader.driver))
            .appendingPathComponent(Self.escape(reader.deviceID))
    }

    func recordPath(_ finger: Finger, user: String, reader: ReaderIdentity) -> String {
        directory(user: user, reader: reader).appendingPathComponent(finger.fprintdName + ".print").path
    }

    /// Escapes a path component: safe characters stay, everything else
    /// (including `/` and a leading `.`) becomes `%XX`; empty becomes `%`.
    static func escape(_ component: String) -> String {
        guard !component.isEmpty else { return "%" }
        var out = ""
        for byte in component.utf8 {
            let c = Character(Unicode.Scalar(byte))
            if (c.isASCII && (c.isLetter || c.isNumber)) || c == "_" || c == "-" {
                out.append(c)
            } else {
                out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    // MARK: Files

    private func makeDirectories(down dir: URL) throws(FingerprintError) {
        // root / user / driver / device id, each 0700.
        var chain: [URL] = []
        var current = dir
        while current.path != root.path, current.path.count > root.path.count {
            chain.append(current)
            current = current.deletingLastPathComponent()
        }
        for url in chain.reversed() { try Self.makeDirectory(url.path) }
    }

    private static func makeDirectory(_ path: String) throws(FingerprintError) {
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { mkdir(path, 0o700) }
        } catch where error == .readOnlyFileSystem {
            // On a read-only file system a missing folder holds no print:
            // the store reads as empty there, and a write fails on its own.
            return
        } catch .fileExists {
            return
        } catch {
            throw FingerprintError.storage(reason: "cannot create \(path): \(error)")
        }
        _ = try? valueOrErrno(retryOnInterrupt: true) { chmod(path, 0o700) }  // whatever the umask
    }

    /// The whole file (EINTR retried by the layer).
    private static func readFile(_ path: String) throws(Errno) -> [UInt8] {
        let file = try OwnedDescriptor.open(path, O_RDONLY)
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            // (withUnsafeMutableBytes rethrows untyped: the Errno leaves in a Result.)
            let n = try buffer.withUnsafeMutableBytes { bytes in Result { () throws(Errno) in try file.read(into: bytes) } }.get()
            if n == 0 { break }
            out.append(contentsOf: buffer[0..<n])
        }
        return out
    }

    /// temp file (0600) + write + fsync + close + rename + fsync of the directory.
    private static func writeAtomically(_ bytes: [UInt8], to path: String) throws(FingerprintError) {
        let dir = (path as NSString).deletingLastPathComponent
        let temp = dir + "/.tmp-" + UUID().uuidString
        let file = try createTemporary(temp)
        do throws(Errno) {
            try write(bytes, durablyTo: file)
            _ = try valueOrErrno(retryOnInterrupt: false) { rename(temp, path) }
        } catch {
            unlink(temp)
            throw FingerprintError.storage(reason: "cannot write \(path): \(error)")
        }
        syncDirectory(dir)
    }

    /// A new file at `temp` (0600; it must not exist).
    private static func createTemporary(_ temp: String) throws(FingerprintError) -> OwnedDescriptor {
        do throws(Errno) {
            return try OwnedDescriptor.open(temp, O_WRONLY | O_CREAT | O_EXCL, mode: 0o600)
        } catch {
            throw FingerprintError.storage(reason: "cannot create \(temp): \(error)")
        }
    }

    /// Writes every byte (short writes continued, EINTR retried), fsyncs
    /// and closes `file` (a close that fails is reported too).
    private static func write(_ bytes: [UInt8], durablyTo file: consuming OwnedDescriptor) throws(Errno) {
        try bytes.withUnsafeBytes { buffer in Result { () throws(Errno) in try file.writeAll(buffer) } }.get()
        let raw = file.rawValue
        _ = try valueOrErrno(retryOnInterrupt: true) { fsync(raw) }
        try file.close()
    }

    private static func syncDirectory(_ path: String) {
        guard let folder = try? OwnedDescriptor.open(path, O_RDONLY | O_DIRECTORY) else { return }
        let raw = folder.rawValue
        _ = try? valueOrErrno(retryOnInterrupt: true) { fsync(raw) }
    }

    static func checksum(_ data: [UInt8]) -> [UInt8] {
        ensureSodium()
        var out = [UInt8](repeating: 0, count: checksumLength)
        data.withUnsafeBufferPointer { input in
            _ = crypto_generichash(&out, checksumLength, input.baseAddress, UInt64(input.count), nil, 0)
        }
        return out
    }
}
