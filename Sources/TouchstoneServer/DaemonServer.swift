import Foundation
import Synchronization
import Touchstone
import TouchstoneSecure
import TouchstonePOSIX
import TouchstoneTPM
import TouchstoneVault
#if canImport(Glibc)
import Glibc
#endif

/// What `touchstoned` serves: one state folder per client uid under
/// `home/users/`, each opened by an in-process engine of the daemon's own,
/// with the daemon's TPM and reader. Clients are told apart by the kernel
/// (SO_PEERCRED), never by what they say.
package final class DaemonServer: Sendable {
    package struct Settings: Sendable {
        /// The daemon's state folder (0700, its own user's).
        package var home: URL
        package var tpm: TPMSelection
        package var reader: ReaderSelection
        /// The reader as the command line chose it (`sim`, `auto`, an id),
        /// which `status` reports, as the embedded engine does.
        package var readerChoice: String
        /// How long a client may stay silent: an idle connection, the rest
        /// of a frame, the answer to a passcode prompt.
        package var timeout: Duration
        /// Most connections at once, and per uid.
        package var maximumConnections = 512
        package var maximumConnectionsPerUser = 32
        /// Reads an import's prints in a process of its own.
        package var printChecker: any PrintChecking = ChildPrintChecker()
        /// Where another user's program's executable is read, when the
        /// daemon may not read it itself (`ProgramNamer`).
        package var programNamer: ProgramNamer?

        package init(home: URL, tpm: TPMSelection, reader: ReaderSelection, timeout: Duration) {
            self.home = home
            self.tpm = tpm
            self.reader = reader
            readerChoice = "\(reader)"
            self.timeout = timeout
        }
    }

    package let settings: Settings
    let log: DaemonLog
    let users: UserEngines
    /// Every passcode attempt's throttle and verifier, per uid.
    let gate: PasscodeGate
    /// Every user's TPM gate.
    let gates: GateStore
    /// The account each uid's vault was made for.
    let accounts: AccountStore
    /// The locked memory clients' frames may hold, per uid and in all.
    package let memory = MemoryBudget()
    private let sessions = Locked<[ObjectIdentifier: DaemonSession]>([:])
    private let stopping = Atomic<Bool>(false)
    /// A pipe whose read end the accept loop watches beside the listener:
    /// `stop()` writes to it, so shutdown wakes the loop itself.
    private let wake: DescriptorPair

    /// Opens the daemon's own database (`home/daemon.sqlite`).
    package init(settings: Settings, log: @escaping @Sendable (String) -> Void) throws {
        self.settings = settings
        self.log = DaemonLog(write: log)
        users = UserEngines(settings: settings, log: self.log)
        // One connection to the daemon's database for both.
        let database = try SQLiteDatabase(path: settings.home.appendingPathComponent("daemon.sqlite").path)
        gate = try PasscodeGate(database: database)
        gates = try GateStore(database: database)
        accounts = try AccountStore(database: database)
        do {
            wake = try OwnedDescriptor.pipe()
        } catch {
            throw DeviceError.storage(StorageFailure(.stateFolder, "pipe: \(error)"))
        }
    }

    /// Accepts connections on `listener` (a bound, listening Unix socket)
    /// until `stop()`; each client is served on its own.
    package func serve(listener: borrowing OwnedDescriptor) {
        while !stopping.load(ordering: .relaxed) {
            var watched = [pollfd(fd: listener.rawValue, events: Int16(POLLIN), revents: 0),
                           pollfd(fd: wake.read.rawValue, events: Int16(POLLIN), revents: 0)]
            do {
                _ = try valueOrErrno(retryOnInterrupt: true) { poll(&watched, 2, -1) }
            } catch {
                log.write("poll failed: \(error)")
                usleep(100_000)
                continue
            }
            if watched[1].revents != 0 { break }  // stop()
            guard watched[0].revents != 0 else { continue }
            do {
                admit(FrameSocket(owning: try listener.accept()))
            } catch .resourceTemporarilyUnavailable, .connectionAbort {
                continue
            } catch {
                log.write("accept failed: \(error)")
                // Out of descriptors or memory: wait, the others go on.
                usleep(100_000)
            }
        }
    }

    /// Serves one connection already accepted (a test's socketpair end).
    package func serve(connection socket: FrameSocket) { admit(socket) }

    private func admit(_ socket: FrameSocket) {
        guard let peer = socket.peerCredentials() else {
            log.write("a connection without peer credentials: closed")
            return
        }
        // A client that stops reading holds a send at most this long.
        socket.setSendDeadline(settings.timeout)
        let session = DaemonSession(server: self, socket: socket, uid: peer.uid, pid: peer.pid)
        let admitted = sessions.withLock { sessions -> Bool in
            let mine = sessions.values.filter { $0.uid == peer.uid }.count
            guard sessions.count < settings.maximumConnections, mine < settings.maximumConnectionsPerUser else { return false }
            sessions[ObjectIdentifier(session)] = session
            return true
        }
        guard admitted else {
            log.write("uid \(peer.uid) pid \(peer.pid): too many connections, refused")
            if let refusal = try? DaemonWire.Frame(.response, Refusal("too many connections; try again later")) {
                session.outbox.postLast(refusal)
            } else {
                socket.shut()
            }
            return
        }
        session.start()
    }

    func ended(_ session: DaemonSession) {
        _ = sessions.withLock { $0.removeValue(forKey: ObjectIdentifier(session)) }
    }

    /// Stops accepting and ends every connection (a call in flight is
    /// cancelled; what the vault had committed stays).
    package func stop() {
        stopping.store(true, ordering: .relaxed)
        var byte: UInt8 = 1
        _ = try? withUnsafeBytes(of: &byte) { bytes in try wake.write.write(bytes) }
        for session in sessions.withLock({ Array($0.values) }) { session.end() }
    }

    /// How many connections are open (the tests' and the log's).
    package var connectionCount: Int { sessions.withLock { $0.count } }
}

/// The daemon's log: one line per event, to stderr (the journal under
/// systemd). Never a secret, an item's name or a passcode.
struct DaemonLog: Sendable {
    let write: @Sendable (String) -> Void
}

/// The per-uid engines, opened at a client's first call and kept warm.
actor UserEngines {
    let settings: DaemonServer.Settings
    private var engines: [uid_t: InProcessEngine] = [:]
    /// Engines being opened, so that two first calls of a uid share one.
    private var opening: [uid_t: Task<Result<InProcessEngine, DeviceError>, Never>] = [:]
    /// Each user's warm passcode (`WarmPasscode`), shared by the engine and
    /// the sessions' passcode checks.
    nonisolated let warm = WarmPasscodes()
    /// The reader's turns, every user's.
    nonisolated let readerTurns: ReaderTurns

    init(settings: DaemonServer.Settings, log: DaemonLog) {
        self.settings = settings
        readerTurns = ReaderTurns(log: log)
    }

    /// The TCTI of the daemon's TPM.
    var tcti: String {
        switch settings.tpm {
        case .tcti(let tcti): tcti
        case .simulator: Simulator(home: settings.home).tcti
        }
    }

    /// The configuration of `uid`'s state folder.
    func configuration(for uid: uid_t) -> Configuration {
        let folder = settings.home.appendingPathComponent("users").appendingPathComponent(String(uid))
        return Configuration(home: folder, tpm: settings.tpm, reader: settings.reader, user: Self.name(of: uid))
    }

    /// The engine of `uid`'s state folder, created 0700 on first use, with
    /// the user's gate (created with a new vault; a vault older than the
    /// gate opens without one).
    func engine(for uid: uid_t, gates: GateStore, throttle: PasscodeGate, accounts: AccountStore) async throws(DeviceError) -> InProcessEngine {
        // The uid is still the account its vault was made for (checked at
        // every call: an account can be deleted and its uid reused while
        // the daemon runs).
        try accounts.check(uid, name: Self.name(of: uid))
        if let engine = engines[uid] { return engine }
        // One engine per uid: a second first call waits for the open in
        // flight (the actor is free while an engine opens).
        if let pending = opening[uid] { return try await pending.value.get() }
        let task = Task { () async -> Result<InProcessEngine, DeviceError> in
            do throws(DeviceError) { return .success(try await self.open(uid, gates: gates, throttle: throttle)) } catch { return .failure(error) }
        }
        opening[uid] = task
        defer { opening[uid] = nil }
        let engine = try await task.value.get()
        engines[uid] = engine
        return engine
    }

    /// Opens `uid`'s engine: its folder made, its gate, the daemon's hooks.
    private func open(_ uid: uid_t, gates: GateStore, throttle: PasscodeGate) async throws(DeviceError) -> InProcessEngine {
        let configuration = configuration(for: uid)
        for path in [configuration.home.deletingLastPathComponent().path, configuration.home.path] {
            do {
                _ = try valueOrErrno(retryOnInterrupt: false) { mkdir(path, 0o700) }
            } catch .fileExists {
            } catch {
                throw .storage(StorageFailure(.stateFolder, "cannot create \(path): \(error)"))
            }
        }
        let gate = try gates.gate(for: uid, vaultExists: FileManager.default.fileExists(
            atPath: configuration.home.appendingPathComponent("vault.sqlite").path), tcti: tcti)
        let turns = readerTurns
        let hooks = DaemonModeHooks(throttle: UserThrottle(gate: throttle, uid: uid), warm: warm.of(uid),
                                    readerChoice: settings.readerChoice, longestEnrolment: GrantPolicy.longestEnrolment,
                                    printChecker: settings.printChecker,
                                    takeReaderTurn: { () async throws(CancellationError) in try await turns.take(for: uid) })
        return try await InProcessEngine.open(configuration, gate: gate, daemon: hooks)
    }

    /// The login name of `uid`, or `uid-N` (prints are labelled with it).
    static func name(of uid: uid_t) -> String {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        if getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, let found = result, let name = found.pointee.pw_name {
            return String(cString: name)
        }
        return "uid-\(uid)"
    }
}
