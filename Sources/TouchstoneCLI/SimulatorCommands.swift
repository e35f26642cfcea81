import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine
import TouchstoneSimulator

/// `sim start|stop|status|touch|print|retry|error|unplug`.
extension Session {
    func simulator(_ command: Command.SimulatorCommand) async throws {
        if case .print(let id, let impression, let output) = command {
            return try printSyntheticFinger(id, impression: impression, to: output)
        }
        let simulator = self.simulator
        try simulator.checkPaths()
        switch command {
        case .start(let withDaemon, let withFIDO, let readerKind):
            switch try simulator.start(readerKind: readerKind) {
            case .alreadyRunning(let pid):
                Output.progress("the simulator is already running (swtpm pid \(pid), state in \(simulator.tpmDirectory)); its reader is now the \(readerKind) reader")
            case .started(let pid):
                Output.progress("simulator started: swtpm pid \(pid), state in \(simulator.tpmDirectory)")
                Output.progress("  TPM:    \(simulator.tcti) (lockout after \(Simulator.maximumPasscodeTries) wrong passcodes, one forgiven every \(Simulator.triesRecoverySeconds) s)")
                Output.progress("  reader: libfprint's \(readerKind.driver) on \(simulator.readerSocket), while a command has it open")
                Output.progress("use it with --sim (or TOUCHSTONE_SIM=1); touch with 'touchstone sim touch ID' from another terminal")
            }
            if withDaemon { try startDaemon() }
            if withFIDO { try startAuthenticator() }
        case .stop:
            if let pid = SimulatorAuthenticator(simulator: simulator).stop() { Output.progress("the simulator's FIDO authenticator stopped (pid \(pid))") }
            let daemon = SimulatorDaemon(simulator: simulator)
            if let pid = daemon.stop() { Output.progress("the simulator's touchstoned stopped (pid \(pid))") }
            if let pid = try simulator.stop() {
                Output.progress("simulator stopped (swtpm pid \(pid)); its state stays in \(simulator.tpmDirectory)")
            } else {
                Output.progress("the simulator is not running")
            }
        case .status:
            let status = simulator.status
            let daemon = SimulatorDaemon(simulator: simulator).runningPID
            let fidoPort = SimulatorAuthenticator(simulator: simulator).port
            if options.json {
                try Output.json(SimulatorStatusWithDaemon(status: status, daemonPID: daemon,
                                                          daemonSocket: simulator.daemonSocket, fidoPort: fidoPort))
            } else {
                Output.result(status.text + "\ndaemon:    " + (daemon.map { "running (pid \($0), socket \(simulator.daemonSocket))" } ?? "not running")
                              + "\nfido:      " + (fidoPort.map { "serving on udp 127.0.0.1:\($0)" } ?? "not running"))
            }
        case .touch(let id, let count, let wait):
            let image = simulator.readerKind == .image
            for n in 1...count {
                try await simulator.touch(id, wait: wait)
                Output.progress("touch \(n) of \(count): \(id)")
                // The image reader takes the next image only once it has
                // dealt with this one (libfprint's pipeline runs on).
                if image, n < count { try await Task.sleep(for: .milliseconds(500)) }
            }
        case .touchImage(let path, let wait):
            try await simulator.touch(image: try Self.readImage(path), wait: wait)
            Output.progress("touch: \(path)")
        case .retry(let kind):
            try await simulator.retry(kind, wait: options.timeout)
        case .error(let error):
            try await simulator.inject(error, wait: options.timeout)
        case .unplug:
            try await simulator.unplug(wait: options.timeout)
        case .print:
            preconditionFailure("sim print is handled before the simulator's paths are checked")
        }
    }
}

extension Session {
    /// The image in the PNG at `path`, as a touch: a clear error for a
    /// file that cannot be read or is no image the reader takes.
    static func readImage(_ path: String) throws(SimulatorError) -> GreyImage {
        let bytes: [UInt8]
        do {
            bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            throw .badImage(path: path, reason: error.localizedDescription)
        }
        do {
            return try GreyImage(png: bytes)
        } catch {
            throw .badImage(path: path, reason: "\(error)")
        }
    }

    /// `sim start --daemon`: the simulator's touchstoned, from the
    /// touchstoned next to this binary (else on PATH).
    func startDaemon() throws {
        let daemon = SimulatorDaemon(simulator: simulator)
        switch try daemon.start(executable: Self.daemonExecutable) {
        case .alreadyRunning(let pid):
            Output.progress("the simulator's touchstoned is already running (pid \(pid), socket \(daemon.socket))")
        case .started(let pid):
            Output.progress("touchstoned started: pid \(pid), socket \(daemon.socket), log \(daemon.logFile)")
            Output.progress("commands with --sim now go through it (--embedded: not)")
        }
    }

    /// `sim start --fido`: this program's `fido serve --udp` on the simulator.
    func startAuthenticator() throws {
        let authenticator = SimulatorAuthenticator(simulator: simulator)
        switch try authenticator.start(executable: Self.thisExecutable) {
        case .alreadyRunning(let pid, let port):
            Output.progress("the simulator's FIDO authenticator is already running (pid \(pid), udp 127.0.0.1:\(port.map(String.init) ?? "?"))")
        case .started(let pid, let port):
            Output.progress("FIDO authenticator started: pid \(pid), udp 127.0.0.1:\(port), log \(authenticator.logFile)")
        }
    }

    /// This program's own file.
    static var thisExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// `installedDaemon`, or the name next to this binary (for the
    /// message that says it is missing).
    static var daemonExecutable: String {
        installedDaemon ?? (ownFolder + "/touchstoned")
    }
}

/// `sim status --json`: the simulator's status and its daemon's.
struct SimulatorStatusWithDaemon: Encodable {
    let status: SimulatorStatus
    let daemonPID: Int32?
    let daemonSocket: String
    let fidoPort: UInt16?

    enum CodingKeys: String, CodingKey { case daemon, daemonSocket, fidoPort }

    func encode(to encoder: any Encoder) throws {
        try status.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(daemonPID, forKey: .daemon)
        try container.encode(daemonSocket, forKey: .daemonSocket)
        try container.encode(fidoPort, forKey: .fidoPort)
    }
}

extension SimulatorStatus {
    /// `sim status` for people.
    var text: String {
        """
        simulator: \(running ? "running (swtpm pid \(pid.map(String.init) ?? "?"))" : "not running")
        state:     \(directory)
        TPM:       \(tcti)
        reader:    \(readerSocket) (libfprint's \(readerKind.driver))
        """
    }
}

extension Session {
    /// `sim print`: impression `impression` of synthetic finger `id` as a
    /// PNG, to `output` or to standard output (refused when that is a
    /// terminal).
    func printSyntheticFinger(_ id: String, impression: Int, to output: String?) throws {
        if output == nil, isatty(STDOUT_FILENO) == 1 {
            throw CLIFailure(.usage, "standard output is a terminal: a PNG would garble it",
                             hint: "touchstone sim print \(id) --output FILE.png, or redirect standard output")
        }
        let png: [UInt8]
        do {
            png = try simulator.syntheticFingerprints.impression(of: id, number: impression).png()
        } catch {
            throw CLIFailure(.failure, "\(error)")
        }
        guard let output else {
            guard Output.write(STDOUT_FILENO, png) else { throw CLIFailure(.failure, "cannot write the PNG to standard output") }
            return
        }
        do {
            try Data(png).write(to: URL(fileURLWithPath: output))
        } catch {
            throw CLIFailure(.failure, "cannot write \(output): \((error as NSError).localizedDescription)")
        }
        Output.progress("wrote impression \(impression) of synthetic finger \(id) to \(output)")
    }
}
