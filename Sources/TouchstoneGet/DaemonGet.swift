import Foundation
import TouchstoneClient
import TouchstoneCLISupport
import TouchstoneCommandLine

/// One `get` through the daemon, as `touchstone-cli` does it with the
/// daemon engine: the item's open ways, an authentication for them when
/// there are any (the reason, the terminal's prompts), the secret to
/// stdout; every error as the same exit code and message.
enum DaemonGet {
    /// The daemon's socket for these options, or nil for the embedded engine.
    static func socket(for options: GlobalOptions) -> String? {
        switch options.engine {
        case .embedded: nil
        case .daemon(let socket): socket
        case .automatic: DaemonSocket.automatic(home: options.home, simulated: options.usesSimulator)
        }
    }

    /// Runs touchstone-cli (next to this binary) with the same arguments.
    static func handOn() -> Never {
        let here = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let cli = (here as NSString).deletingLastPathComponent + "/touchstone-cli"
        var argv: [UnsafeMutablePointer<CChar>?] = CommandLine.arguments.map { strdup($0) } + [nil]
        execv(cli, &argv)
        Output.error("cannot run \(cli): \(String(cString: strerror(errno)))")
        exit(ExitCode.failure.rawValue)
    }

    static func run(service: String, account: String, reason: String?, options: GlobalOptions, socket: String) async -> Int32 {
        let signals = SignalCancellation()
        let task = Task.detached { () async -> Int32 in
            let translation = ErrorTranslation(simulatedReader: options.reader == .simulator, simulatedTPM: options.tpm == .simulator)
            do {
                try await get(service: service, account: account, reason: reason, options: options, socket: socket)
                return ExitCode.success.rawValue
            } catch {
                var failure = translation.failure(for: error)
                if Task.isCancelled { failure = .cancelled }
                failure.report()
                return failure.code.rawValue
            }
        }
        signals.onSignal { task.cancel() }
        let code = await task.value
        return signals.wasSignalled ? ExitCode.cancelled.rawValue : code
    }

    private static func get(service: String, account: String, reason: String?, options: GlobalOptions,
                            socket: String) async throws {
        let connection: DaemonConnection
        do {
            connection = DaemonConnection(socket: try FrameSocket.connect(to: socket))
        } catch {
            throw DeviceError.daemon(DaemonFailure(.unreachable, socket: socket, reason: error.description))
        }
        defer { connection.close() }
        let call = Call(connection: connection, socket: socket)
        guard case .access(let access) = try await call.keychain(.openAccess(service: service, account: account)).0 else {
            throw KeychainError.daemon(call.unexpected)
        }
        var grant: UInt64?
        if !access.flags.isEmpty {
            let interaction = TerminalInteraction(passcodeDescriptor: options.passcodeFD)
            let authenticate = DaemonCall.authenticate(
                access: access, reason: reason ?? "touchstone get: read the secret of \(service) / \(account)",
                interactive: true, interactionNotAllowed: false, touchTimeoutMilliseconds: options.timeout.wholeMilliseconds)
            let (outcome, _) = try await call.exchange(authenticate, interaction: interaction)
            switch outcome {
            case .success(.grant(let id, _, _)): grant = id
            case .authentication(let error): throw KeychainError(error)
            case .refused(let why): throw KeychainError.daemon(DaemonFailure(.refused, socket: socket, reason: why))
            default: throw KeychainError.daemon(call.unexpected)
            }
        }
        let (result, secrets) = try await call.keychain(.secret(service: service, account: account, grant: grant))
        guard case .secret = result, secrets.count == 1 else { throw KeychainError.daemon(call.unexpected) }
        try Task.checkCancellation()  // a signal just now: write nothing
        guard secrets[0].withUnsafeBytes({ Output.write(1, $0) }) else {
            throw CLIFailure(.failure, "cannot write the secret to stdout: \(String(cString: strerror(errno)))")
        }
    }


    /// The calls of one connection, their failures read as the daemon
    /// engine reads them.
    struct Call {
        let connection: DaemonConnection
        let socket: String

        var unexpected: DaemonFailure { DaemonFailure(.refused, socket: socket, reason: "an answer of another kind than the call's") }

        func exchange(_ call: DaemonCall, interaction: (any AuthenticationInteraction)? = nil) async throws -> (DaemonOutcome, [SecureBytes]) {
            do {
                return try await connection.call(call, interaction: interaction, socketPath: socket)
            } catch {
                throw KeychainError.daemon(error)
            }
        }

        func keychain(_ call: DaemonCall) async throws -> (DaemonResult, [SecureBytes]) {
            let (outcome, secrets) = try await exchange(call)
            switch outcome {
            case .success(let result): return (result, secrets)
            case .keychain(let error): throw error
            case .authentication(let error): throw KeychainError.authentication(error)
            case .refused(let why): throw KeychainError.daemon(DaemonFailure(.refused, socket: socket, reason: why))
            default: throw KeychainError.daemon(unexpected)
            }
        }
    }
}
