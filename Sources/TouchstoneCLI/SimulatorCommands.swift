import Foundation
import Touchstone
import TouchstoneCommandLine

/// `sim start|stop|status|touch|retry|error|unplug`.
extension Session {
    func simulator(_ command: Command.SimulatorCommand) async throws {
        let simulator = self.simulator
        try simulator.checkPaths()
        switch command {
        case .start:
            switch try simulator.start() {
            case .alreadyRunning(let pid):
                Output.progress("the simulator is already running (swtpm pid \(pid), state in \(simulator.tpmDirectory))")
            case .started(let pid):
                Output.progress("simulator started: swtpm pid \(pid), state in \(simulator.tpmDirectory)")
                Output.progress("  TPM:    \(simulator.tcti) (lockout after \(Simulator.maximumPasscodeTries) wrong passcodes, one forgiven every \(Simulator.triesRecoverySeconds) s)")
                Output.progress("  reader: libfprint's virtual reader on \(simulator.readerSocket), while a command has it open")
                Output.progress("use it with --sim (or TOUCHSTONE_SIM=1); touch with 'touchstone sim touch ID' from another terminal")
            }
        case .stop:
            if let pid = try simulator.stop() {
                Output.progress("simulator stopped (swtpm pid \(pid)); its state stays in \(simulator.tpmDirectory)")
            } else {
                Output.progress("the simulator is not running")
            }
        case .status:
            let status = simulator.status
            if options.json { try Output.json(status) } else { Output.result(status.text) }
        case .touch(let id, let count, let wait):
            for n in 1...count {
                try await simulator.touch(id, wait: wait)
                Output.progress("touch \(n) of \(count): \(id)")
            }
        case .retry(let kind):
            try await simulator.retry(kind, wait: options.timeout)
        case .error(let error):
            try await simulator.inject(error, wait: options.timeout)
        case .unplug:
            try await simulator.unplug(wait: options.timeout)
        }
    }
}

extension SimulatorStatus {
    /// `sim status` for people.
    var text: String {
        """
        simulator: \(running ? "running (swtpm pid \(pid.map(String.init) ?? "?"))" : "not running")
        state:     \(directory)
        TPM:       \(tcti)
        reader:    \(readerSocket)
        """
    }
}
