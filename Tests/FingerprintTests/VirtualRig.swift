import Foundation
import TouchstoneSimulator
import Glibc
import Testing
@testable import TouchstoneFingerprint

/// One private virtual reader for one test: a fresh directory under /tmp
/// (short, since a unix socket path is at most 107 bytes), a fresh
/// `LibfprintReader` whose libfprint context sees only this socket, and the
/// socket to drive it. A new socket per test means commands a previous test
/// left queued can never reach this one.
final class VirtualRig: Sendable {
    enum Kind: Sendable {
        /// `virtual_device`: host-side matching, verify only.
        case device
        /// `virtual_device_storage`: prints on the reader, identify/list/delete.
        case storage
        /// `virtual_image`: an image sensor's pipeline, fed greyscale images.
        case image

        var driver: String {
            switch self {
            case .device: "virtual_device"
            case .storage: "virtual_device_storage"
            case .image: "virtual_image"
            }
        }

        func readers(socket: String) -> LibfprintReader.VirtualReaders {
            switch self {
            case .device: .init(device: socket)
            case .storage: .init(storage: socket)
            case .image: .init(image: socket)
            }
        }
    }

    let directory: String
    let socket: VirtualReaderSocket
    let backend: LibfprintReader
    let reader: ReaderInfo

    /// Creates the reader and opens it, so its socket listens. Fails the test
    /// (never skips it) when libfprint has no such virtual driver.
    init(_ kind: Kind) async throws {
        var template = Array("/tmp/tsfp-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw RigError("mkdtemp failed: errno \(errno)")
        }
        directory = String(cString: made)
        socket = VirtualReaderSocket(path: directory + "/s")
        backend = LibfprintReader(virtualReaders: kind.readers(socket: socket.path))
        let found = try await backend.readers().first { $0.driver == kind.driver }
        reader = try #require(found, """
            libfprint did not create its \(kind.driver) reader: the installed libfprint \
            lacks the virtual drivers these tests need
            """)
        try await backend.open(reader.identity)
    }

    /// Sends one command to the reader.
    @discardableResult
    func send(_ command: String) async throws -> String {
        try await socket.send(command)
    }

    /// Closes the reader and removes the directory.
    func finish() async {
        await backend.close()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A fresh state directory for an enrolment store, inside the rig's own.
    func stateDirectory() -> URL {
        URL(fileURLWithPath: directory).appendingPathComponent("state")
    }
}

/// Collects scan events from libfprint's thread for later inspection.
final class EventLog: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var storage: [ScanEvent] = []

    var handler: ScanEventHandler {
        { [self] event in lock.withLock { storage.append(event) } }
    }

    var events: [ScanEvent] { lock.withLock { storage } }
}

/// A failure of the test rig itself (not of the code under test).
struct RigError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
