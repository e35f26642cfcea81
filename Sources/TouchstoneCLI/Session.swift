import Foundation
import Touchstone
import TouchstoneCommandLine
import class TouchstoneVault.Vault

/// One run of a command: its options, how errors are told, where passcodes
/// come from, and the device, opened on first use and always closed (the
/// reader released) before the process exits.
final class Session {
    let options: GlobalOptions
    let passcodes: PasscodeSource
    let translation: ErrorTranslation
    let simulator: SimulatorLayout
    private(set) var device: TouchstoneDevice?

    init(options: GlobalOptions) {
        self.options = options
        passcodes = PasscodeSource(fd: options.passcodeFD)
        translation = ErrorTranslation(simulatedReader: options.reader == .simulator,
                                       simulatedTPM: options.tpm == .simulator)
        simulator = SimulatorLayout(home: options.home)
    }

    /// The device for the chosen TPM and reader. With the simulator's TPM,
    /// a simulator that is not running is exit 11 with the hint to start it.
    func openDevice() throws -> TouchstoneDevice {
        if let device { return device }
        let configuration = try configuration()
        do {
            let device = try TouchstoneDevice(configuration: configuration)
            self.device = device
            return device
        } catch {
            throw translation.failure(for: error)
        }
    }

    /// The library configuration the options describe.
    func configuration() throws -> Configuration {
        // First the state folder: one the user cannot read would otherwise
        // show as a simulator that is not running.
        _ = try Vault.checkStateDirectory(URL(fileURLWithPath: options.home))
        let tcti: String
        switch options.tpm {
        case .simulator:
            try simulator.checkPaths()
            guard simulator.swtpm.isRunning else {
                throw CLIFailure(.tpmFailed, "the simulator is not running (no swtpm for \(simulator.directory))",
                                 hint: "touchstone sim start")
            }
            tcti = simulator.swtpm.tcti
        case .tcti(let text): tcti = text
        }
        let reader: Touchstone.ReaderSelection
        switch options.reader {
        case .simulator:
            try simulator.checkPaths()
            try simulator.createDirectories()
            reader = .virtual(socket: simulator.readerSocket)
        case .automatic: reader = .auto
        case .id(let id): reader = .id(id)
        }
        return Configuration(home: URL(fileURLWithPath: options.home), tcti: tcti, reader: reader)
    }

    /// A fresh context that talks to the person through the terminal.
    func makeContext(_ device: TouchstoneDevice) -> AuthenticationContext {
        let context = device.makeContext()
        context.interaction = TerminalInteraction(passcodes: passcodes)
        context.touchTimeout = options.timeout
        return context
    }

    /// Releases the reader.
    func close() async {
        await device?.close()
    }
}
