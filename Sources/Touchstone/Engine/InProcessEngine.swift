import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneSimulator
import TouchstoneTPM
import TouchstoneVault

/// The in-process engine ("embedded"): the vault, the TPM and the reader in
/// this process. Nothing to install; right for the simulator, CI and a
/// single-user laptop. What it guarantees, and what a process running as
/// the same user can still do, is in docs/threat-model.md.
///
/// An actor on a thread of its own (DedicatedThread): every vault and TPM
/// call, which block, runs there; a touch is awaited on libfprint's thread
/// with the actor free meanwhile.
package actor InProcessEngine: Engine {
    package nonisolated let configuration: Configuration
    let thread: DedicatedThread
    let tpm: TPM
    let vault: Vault
    let readerTarget: ReaderTarget
    /// The reader, opened on first use; released by `close()`.
    var reader: ReaderConnection?
    /// Daemon mode: the user's turn at the daemon's reader, held while
    /// `reader` is open.
    var readerTurn: ReaderTurn?
    /// Daemon mode: what the daemon lends this user's engine (the
    /// passcode throttle, the warm passcode); nil when embedded.
    let daemon: DaemonModeHooks?
    /// Daemon mode: the user's last right passcode, kept warm.
    var warm: (any WarmPasscodeKeeping)? { daemon?.warm }

    package nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    package nonisolated var taskExecutor: (any TaskExecutor)? { thread }

    private init(configuration: Configuration, thread: DedicatedThread, backend: Backend, daemon: DaemonModeHooks?) {
        self.configuration = configuration
        self.daemon = daemon
        self.thread = thread
        tpm = backend.tpm
        vault = backend.vault
        readerTarget = backend.readerTarget
    }

    deinit {
        // The reader's backend and claim release themselves when they go.
        thread.recycle()
    }

    /// A thread for an engine.
    package static func makeThread() -> DedicatedThread { DedicatedThread.make() }

    /// Opens the vault of `configuration` (creating it on first use) with
    /// its TPM, on `thread` (one of its own by default), which then runs the
    /// engine; on a failure the thread is given back.
    /// `gate`: the daemon's gate for this user (daemon mode only): every
    /// key this engine seals needs it; `daemon`: the daemon's throttle and
    /// warm passcode for the user.
    package static func open(_ configuration: Configuration, on thread: DedicatedThread = makeThread(),
                             gate: TPMGate? = nil, daemon: DaemonModeHooks? = nil) async throws(DeviceError) -> InProcessEngine {
        do throws(BackendFailure) {
            let backend = try await thread.run { () throws(BackendFailure) -> Backend in try Backend(configuration, gate: gate) }
            return InProcessEngine(configuration: configuration, thread: thread, backend: backend, daemon: daemon)
        } catch {
            thread.recycle()
            throw DeviceError(error)
        }
    }

    package func call<R: EngineOperation>(_ request: R,
                                          interaction: (any AuthenticationInteraction)?) async throws(R.Failure) -> R.Response {
        try await request.run(on: self, interaction: interaction)
    }

    package func close() async {
        let open = reader
        let turn = readerTurn
        reader = nil
        readerTurn = nil
        await open?.close()
        // The reader released: the next user's request may have it.
        turn?.end()
    }
}

/// What an engine opens: the state folder checked, the TPM and reader the
/// configuration names resolved, the TPM connected, the vault opened (the
/// enrolled prints are in it). Blocking work, done on the engine's thread.
struct Backend: Sendable {
    let tpm: TPM
    let vault: Vault
    let readerTarget: ReaderTarget

    init(_ configuration: Configuration, gate: TPMGate? = nil) throws(BackendFailure) {
        // The state folder first: one the user cannot read would otherwise
        // show as a simulator that is not running.
        do throws(StorageFailure) { _ = try Vault.checkStateDirectory(configuration.home) } catch { throw .storage(error) }
        let tcti = try Self.tcti(configuration)
        readerTarget = try simulatorCall(ReaderTarget(configuration))
        tpm = try tpmCall(TPM(tcti: tcti, gate: gate))
        vault = try vaultCall(Vault(home: configuration.home, tpm: tpm, user: configuration.user))
    }

    /// The TCTI string of the TPM `configuration` names. The simulator's
    /// must be running.
    static func tcti(_ configuration: Configuration) throws(BackendFailure) -> String {
        switch configuration.tpm {
        case .tcti(let tcti): return tcti
        case .simulator:
            let simulator = configuration.simulator
            try simulatorCall(simulator.checkPaths())
            guard simulator.status.running else {
                throw BackendFailure.tpm(TPMFailure(.unreachable, "the simulator is not running (no swtpm for \(simulator.directory))"))
            }
            return simulator.tcti
        }
    }
}
