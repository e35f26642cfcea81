import Foundation
import TouchstoneModel
import TouchstoneTPM

/// The simulator: a private swtpm and libfprint's virtual reader under a
/// state folder's `sim/`, reached by the same code paths as a real TPM and
/// reader. A device opened with `.simulator` for its TPM and reader uses
/// them; `touch` puts a simulated finger on the reader while a process has
/// it open (waiting for a touch).
///
/// With the `device` reader (the default) a finger is an id string:
/// enrolling takes as many touches of one id as the reader has stages
/// (five); a touch of another id does not match. With the `image` reader
/// a touch of an id is a synthetic impression of that finger, a new one
/// each time, which libfprint's image pipeline matches or not.
public struct Simulator: Sendable, Hashable {
    /// Wrong passcodes in a row that lock the simulator's TPM (its
    /// dictionary-attack limit).
    public static let maximumPasscodeTries: UInt32 = 10
    /// Seconds after which the simulator's TPM forgets one wrong passcode.
    public static let triesRecoverySeconds: UInt32 = 60

    package let layout: SimulatorLayout

    /// The simulator of the state folder `home`.
    public init(home: URL) { layout = SimulatorLayout(home: home.path) }

    /// `home/sim`.
    public var directory: String { layout.directory }
    /// swtpm's folder: its state, sockets, pid file and log.
    public var tpmDirectory: String { layout.swtpm.directory }
    /// The TCTI string of its swtpm.
    public var tcti: String { layout.swtpm.tcti }
    /// The virtual reader's socket (it listens while a process has the
    /// reader open).
    public var readerSocket: String { layout.readerSocket }
    /// The socket of the simulator's daemon (`sim start --daemon`).
    public var daemonSocket: String { layout.daemonSocket }
    /// Which of libfprint's virtual readers the simulator's reader is, as
    /// `start` recorded it (`device` when nothing is recorded).
    public var readerKind: VirtualReaderKind { VirtualReaderKind(recordedFor: readerSocket) }

    /// Whether its swtpm runs, and where everything is.
    public var status: SimulatorStatus {
        let swtpm = layout.swtpm
        let pid = swtpm.pid
        return SimulatorStatus(running: pid != nil, pid: pid, directory: directory, tcti: swtpm.tcti,
                               readerSocket: readerSocket, readerKind: readerKind)
    }

    /// Refuses a state folder so deep that the sockets would not fit.
    public func checkPaths() throws(SimulatorError) { try layout.checkPaths() }

    /// What `start` found or did.
    public enum Start: Sendable, Hashable {
        /// Started: swtpm's pid.
        case started(pid: Int32)
        /// It was running already.
        case alreadyRunning(pid: Int32)
    }

    /// Starts swtpm (its state kept across restarts) and sets its
    /// dictionary-attack limits (`maximumPasscodeTries`, `triesRecoverySeconds`);
    /// records `readerKind` as the reader's (also when swtpm runs already):
    /// a process that opens the reader from then on gets that kind.
    @discardableResult
    public func start(readerKind: VirtualReaderKind = .device) throws(SimulatorError) -> Start {
        try layout.checkPaths()
        try layout.createDirectories()
        try layout.record(readerKind)
        let swtpm = layout.swtpm
        if let pid = swtpm.pid { return .alreadyRunning(pid: pid) }
        let pid = try swtpm.start()
        do {
            try TPM(tcti: swtpm.tcti).setDictionaryAttackParameters(
                maxTries: Self.maximumPasscodeTries, recoveryTime: Self.triesRecoverySeconds,
                lockoutRecovery: Self.triesRecoverySeconds)
        } catch {
            throw .tpm(error.failure)
        }
        return .started(pid: pid)
    }

    /// Stops swtpm the clean way (TPM2_Shutdown, then SIGTERM by pid);
    /// its state stays. Returns the pid stopped, nil when it was not running.
    @discardableResult
    public func stop() throws(SimulatorError) -> Int32? {
        try layout.checkPaths()
        let swtpm = layout.swtpm
        guard let pid = swtpm.pid else { return nil }
        try swtpm.stop()
        return pid
    }

    /// Puts simulated finger `finger` on the reader once, as soon as a
    /// process has it open (waiting up to `wait`). With the image reader:
    /// the finger's next synthetic impression, returned when the reader
    /// has taken it in.
    public func touch(_ finger: String, wait: Duration = .seconds(30)) async throws(SimulatorError) {
        switch readerKind {
        case .device, .storage:
            try await send("SCAN \(finger)", wait: wait)
        case .image:
            let number = try layout.nextImpression(of: finger)
            try await touch(image: syntheticFingerprints.impression(of: finger, number: number), wait: wait)
        }
    }

    /// The image reader's synthetic fingerprints: masters kept in
    /// `sim/fingers` once the simulator's folder exists (each `sim touch`
    /// and `sim print` is a process of its own, and a master is the
    /// expensive part), in memory only before.
    package var syntheticFingerprints: SyntheticFingerprints {
        var status = stat()
        guard stat(layout.directory, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else { return .shared }
        return SyntheticFingerprints(keepingIn: layout.fingersDirectory)
    }

    /// Puts `image` on the image reader (`sim start --reader-kind image`).
    package func touch(image: GreyImage, wait: Duration = .seconds(30)) async throws(SimulatorError) {
        guard readerKind == .image else { throw .wrongReaderKind(readerKind, needed: .image) }
        try await reach(wait) { socket in try await socket.sendImage(image, wait: wait, untilTaken: true) }
    }

    /// Makes the reader report a poor touch; it keeps waiting.
    public func retry(_ retry: SimulatedRetry, wait: Duration = .seconds(30)) async throws(SimulatorError) {
        if readerKind == .image {
            return try await reach(wait) { socket in try await socket.sendImageRetry(retry, wait: wait, untilTaken: true) }
        }
        try await send("RETRY \(retry.libfprintCode)", wait: wait)
    }

    /// Makes the reader fail with a device error.
    public func inject(_ error: SimulatedReaderError, wait: Duration = .seconds(30)) async throws(SimulatorError) {
        if readerKind == .image {
            return try await reach(wait) { socket in try await socket.sendImageError(error, wait: wait, untilTaken: true) }
        }
        try await send("ERROR \(error.libfprintCode)", wait: wait)
    }

    /// Unplugs the reader from the process that has it open.
    public func unplug(wait: Duration = .seconds(30)) async throws(SimulatorError) {
        if readerKind == .image { return try await reach(wait) { socket in try await socket.sendImageRemoval(wait: wait) } }
        try await send("UNPLUG", wait: wait)
    }

    private func send(_ command: String, wait: Duration) async throws(SimulatorError) {
        try await reach(wait) { socket in _ = try await socket.send(command, wait: wait) }
    }

    /// Runs `body` on the reader's socket; a failure there is the reader
    /// not open (within `wait`), or a cancellation.
    private func reach(_ wait: Duration, _ body: (VirtualReaderSocket) async throws -> Void) async throws(SimulatorError) {
        try layout.checkPaths()
        do {
            try await body(VirtualReaderSocket(path: layout.readerSocket))
        } catch {
            if Task.isCancelled || error is CancellationError { throw .cancelled }
            throw .readerNotOpen(socket: layout.readerSocket, waited: wait)
        }
    }
}

/// What `Simulator.status` reports.
public struct SimulatorStatus: Sendable, Hashable, Encodable {
    public var running: Bool
    /// swtpm's pid, while it runs.
    public var pid: Int32?
    public var directory: String
    public var tcti: String
    public var readerSocket: String
    /// Which virtual reader it is (`sim start --reader-kind`).
    public var readerKind: VirtualReaderKind
}
