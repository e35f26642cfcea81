import Foundation
import TouchstoneCommandLine
import TouchstoneFingerprint
import TouchstoneTPM

/// `sim start|stop|status|touch|retry|error|unplug`.
extension Session {
    /// The simulator's dictionary-attack parameters: 10 wrong passcodes in a
    /// row lock the TPM; one failure is forgotten every 60 s.
    static let simulatorMaxTries: UInt32 = 10
    static let simulatorRecoverySeconds: UInt32 = 60

    func simulator(_ command: Command.SimulatorCommand) async throws {
        try simulator.checkPaths()
        let swtpm = simulator.swtpm
        switch command {
        case .start:
            if let pid = swtpm.pid {
                Output.progress("the simulator is already running (swtpm pid \(pid), state in \(swtpm.directory))")
                return
            }
            try simulator.createDirectories()
            let pid = try translating { try swtpm.start() }
            try translating {
                try TPM(tcti: swtpm.tcti).setDictionaryAttackParameters(
                    maxTries: Self.simulatorMaxTries, recoveryTime: Self.simulatorRecoverySeconds,
                    lockoutRecovery: Self.simulatorRecoverySeconds)
            }
            Output.progress("simulator started: swtpm pid \(pid), state in \(swtpm.directory)")
            Output.progress("  TPM:    \(swtpm.tcti) (lockout after \(Self.simulatorMaxTries) wrong passcodes, one forgiven every \(Self.simulatorRecoverySeconds) s)")
            Output.progress("  reader: libfprint's virtual reader on \(simulator.readerSocket), while a command has it open")
            Output.progress("use it with --sim (or TOUCHSTONE_SIM=1); touch with 'touchstone sim touch ID' from another terminal")
        case .stop:
            guard let pid = swtpm.pid else {
                Output.progress("the simulator is not running")
                return
            }
            try translating { try swtpm.stop() }
            Output.progress("simulator stopped (swtpm pid \(pid)); its state stays in \(swtpm.directory)")
        case .status:
            let report = SimulatorStatus(running: swtpm.isRunning, pid: swtpm.pid, directory: simulator.directory,
                                         tcti: swtpm.tcti, readerSocket: simulator.readerSocket)
            if options.json { try Output.json(report) } else { Output.result(report.text) }
        case .touch(let id, let count, let wait):
            for n in 1...count {
                try await send("SCAN \(id)", wait: wait)
                Output.progress("touch \(n) of \(count): \(id)")
            }
        case .retry(let kind):
            try await send("RETRY \(kind.libfprintCode)", wait: options.timeout)
        case .error(let error):
            try await send("ERROR \(error.libfprintCode)", wait: options.timeout)
        case .unplug:
            try await send("UNPLUG", wait: options.timeout)
        }
    }

    /// One command to the simulated reader, once a touchstone process has
    /// it open (waiting up to `wait`).
    private func send(_ command: String, wait: Duration) async throws {
        do {
            try await VirtualReaderSocket(path: simulator.readerSocket).send(command, wait: wait)
        } catch is CancellationError {
            throw CLIFailure.cancelled
        } catch {
            if Task.isCancelled { throw CLIFailure.cancelled }
            throw CLIFailure(.noReader, "no touchstone process opened the simulated reader within \(wait) (\(simulator.readerSocket))",
                             hint: "run a command that waits for a touch with --sim first, e.g. touchstone --sim verify")
        }
    }
}

/// What `sim status` reports.
struct SimulatorStatus: Encodable {
    var running: Bool
    var pid: Int32?
    var directory: String
    var tcti: String
    var readerSocket: String

    var text: String {
        """
        simulator: \(running ? "running (swtpm pid \(pid.map(String.init) ?? "?"))" : "not running")
        state:     \(directory)
        TPM:       \(tcti)
        reader:    \(readerSocket)
        """
    }
}
