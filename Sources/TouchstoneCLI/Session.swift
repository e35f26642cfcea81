import Foundation
import Touchstone
import TouchstoneCommandLine

/// One run of a command: its options, how errors are told, the terminal
/// interaction, and the device, opened on first use and always closed (the
/// reader released) before the process exits.
final class Session {
    let options: GlobalOptions
    let interaction: TerminalInteraction
    let translation: ErrorTranslation
    let configuration: Configuration
    private(set) var device: TouchstoneDevice?

    init(options: GlobalOptions) {
        self.options = options
        interaction = TerminalInteraction(passcodeDescriptor: options.passcodeFD)
        translation = ErrorTranslation(simulatedReader: options.reader == .simulator,
                                       simulatedTPM: options.tpm == .simulator)
        configuration = Configuration(home: URL(fileURLWithPath: options.home), tpm: options.tpm, reader: options.reader)
    }

    /// The simulator of the state folder.
    var simulator: Simulator { configuration.simulator }

    /// The device for the chosen TPM and reader. With the simulator's TPM,
    /// a simulator that is not running is exit 11 with the hint to start it.
    func openDevice() async throws -> TouchstoneDevice {
        if let device { return device }
        let device = try await TouchstoneDevice(configuration: configuration)
        self.device = device
        return device
    }

    /// A fresh context that talks to the person through the terminal.
    func makeContext(_ device: TouchstoneDevice) -> AuthenticationContext {
        let context = device.makeContext()
        context.interaction = interaction
        context.touchTimeout = options.timeout
        return context
    }

    /// Releases the reader.
    func close() async {
        await device?.close()
    }
}
