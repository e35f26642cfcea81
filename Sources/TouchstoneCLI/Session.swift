import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// One run of a command: its options, how errors are told, the terminal
/// interaction, and the device, opened where the command needs it and
/// always closed (the reader released) before the process exits.
final class Session {
    let options: GlobalOptions
    let interaction: TerminalInteraction
    let translation: ErrorTranslation
    let configuration: Configuration

    init(options: GlobalOptions) {
        self.options = options
        interaction = TerminalInteraction(passcodeDescriptor: options.passcodeFD)
        translation = ErrorTranslation(simulatedReader: options.reader == .simulator,
                                       simulatedTPM: options.tpm == .simulator)
        let engine: EngineSelection = switch options.engine {
        case .automatic: .automatic
        case .embedded: .embedded
        case .daemon(let socket): .daemon(socket: socket)
        }
        configuration = Configuration(home: URL(fileURLWithPath: options.home), tpm: options.tpm, reader: options.reader,
                                      engine: engine)
    }

    /// The simulator of the state folder.
    var simulator: Simulator { configuration.simulator }

    /// Runs `body` with the device for the chosen TPM and reader (on the
    /// device's engine thread), and closes it, the reader released,
    /// whether `body` returns or throws. With the simulator's TPM, a
    /// simulator that is not running is exit 11 with the hint to start it.
    func withDevice<R>(engineOn loop: (any EngineLoop)? = nil, _ body: (TouchstoneDevice) async throws -> R) async throws -> R {
        try await TouchstoneDevice.withDevice(configuration, engineOn: loop, body)
    }

    /// A fresh context that talks to the person through the terminal.
    func makeContext(_ device: TouchstoneDevice) -> AuthenticationContext {
        let context = device.makeContext()
        context.interaction = interaction
        context.touchTimeout = options.timeout
        return context
    }
}
