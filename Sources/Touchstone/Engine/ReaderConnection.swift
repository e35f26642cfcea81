import Foundation
import TouchstoneFingerprint
import TouchstonePOSIX

/// The reader a configuration names, resolved: the simulator's is its
/// virtual reader at the state folder's `sim/reader`.
enum ReaderTarget: Sendable, Hashable {
    case automatic
    case id(String)
    /// A virtual reader: its socket, and which of libfprint's it is (as
    /// recorded beside the socket: `sim start --reader-kind`).
    case virtual(socket: String, kind: VirtualReaderKind)

    /// `preparing`: create the simulator's folders, where its reader's
    /// socket and claim go (not for a look that opens nothing).
    init(_ configuration: Configuration, preparing: Bool = true) throws(SimulatorError) {
        switch configuration.reader {
        case .automatic: self = .automatic
        case .id(let id): self = .id(id)
        case .virtual(let socket): self = .virtual(socket: socket, kind: VirtualReaderKind(recordedFor: socket))
        case .simulator:
            let layout = configuration.simulator.layout
            try layout.checkPaths()
            if preparing { try layout.createDirectories() }
            self = .virtual(socket: layout.readerSocket, kind: VirtualReaderKind(recordedFor: layout.readerSocket))
        }
    }

    /// A libfprint context that finds this reader (a virtual one only
    /// when named).
    func makeBackend() -> LibfprintReader {
        switch self {
        case .virtual(let socket, .device): LibfprintReader(virtualReaders: .init(device: socket))
        case .virtual(let socket, .storage): LibfprintReader(virtualReaders: .init(storage: socket))
        case .virtual(let socket, .image): LibfprintReader(virtualReaders: .init(image: socket))
        case .automatic, .id: LibfprintReader()
        }
    }

    /// This reader among those libfprint lists.
    func choose(among readers: [ReaderInfo]) -> ReaderInfo? {
        switch self {
        case .virtual(_, let kind): readers.first { $0.driver == kind.driver }
        case .automatic: readers.first
        case .id(let id): readers.first { $0.identity.description == id || $0.deviceID == id }
        }
    }

    /// Why `choose` found nothing.
    func notFound(among readers: [ReaderInfo]) -> FingerprintError {
        .notAvailable(reason: readers.isEmpty ? "no fingerprint reader found" : "reader not found")
    }
}

/// An open (claimed) reader and the session over it.
struct ReaderConnection: Sendable {
    let backend: LibfprintReader
    let session: ReaderSession
    /// For the simulator's reader, which a second process would otherwise
    /// take over: the claim on its socket (VirtualReaderClaim).
    let claim: VirtualReaderClaim?

    /// Opens `target`'s reader, claimed, for `user`'s prints.
    static func open(_ target: ReaderTarget, user: String) async throws(FingerprintError) -> ReaderConnection {
        var claim: VirtualReaderClaim?
        if case .virtual(let socket, _) = target {
            // libfprint's virtual reader takes its socket over from any
            // process that has it open: claim it first, as a USB reader is
            // claimed, and report busy when another process holds it.
            claim = try VirtualReaderClaim(socket: socket)
        }
        let backend = target.makeBackend()
        do throws(FingerprintError) {
            let readers = try await backend.readers()
            guard let info = target.choose(among: readers) else { throw target.notFound(among: readers) }
            try await backend.open(info.identity)
            return ReaderConnection(backend: backend, claim: claim,
                                    session: ReaderSession(backend: backend, user: user, reader: info))
        } catch {
            await backend.tearDown()
            claim?.release()
            throw error
        }
    }

    private init(backend: LibfprintReader, claim: VirtualReaderClaim?, session: ReaderSession) {
        self.backend = backend
        self.claim = claim
        self.session = session
    }

    /// Releases the reader (fprintd or another process may then have it)
    /// and drops its libfprint context, awaited (the connection is done).
    func close() async {
        await backend.tearDown()
        claim?.release()
    }

    /// What `status` says of `target`'s reader, found without opening it
    /// (so without prompting and without taking it from anyone).
    static func probe(_ target: ReaderTarget, selection: ReaderSelection) async -> Status.Reader {
        var status = Status.Reader(available: false, selection: selection.description)
        let backend = target.makeBackend()
        do throws(FingerprintError) {
            let readers = try await backend.readers()
            if let reader = target.choose(among: readers) {
                status.id = reader.identity.description
                status.name = reader.name
                if case .virtual(let socket, _) = target, VirtualReaderClaim.isHeld(socket: socket) {
                    status.reason = "busy: another touchstone process has it open"
                        + (VirtualReaderClaim.holder(socket: socket).map { " (\(PeerProgram.named(pid: $0, pidfd: nil)))" } ?? "")
                } else {
                    status.available = true
                }
            } else {
                status.reason = readers.isEmpty ? "no fingerprint reader found" : "no reader \(selection.description)"
            }
        } catch {
            status.reason = "\(error)"
        }
        await backend.tearDown()
        return status
    }
}
