import FoundationEssentials
import Glibc
import TouchstoneClient
import TouchstoneCLISupport
import TouchstoneCommandLine
import TouchstonePOSIX

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
        var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &path, path.count - 1)
        let here = length > 0 ? String(decoding: path[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                              : CommandLine.arguments[0]
        let folder = here.lastIndex(of: "/").map { String(here[..<$0]) } ?? "."
        let cli = folder + "/touchstone-cli"
        var argv: [UnsafeMutablePointer<CChar>?] = CommandLine.arguments.map { strdup($0) } + [nil]
        do {
            _ = try valueOrErrno(retryOnInterrupt: false) { execv(cli, &argv) }
        } catch {
            Output.error("cannot run \(cli): \(error)")
        }
        exit(ExitCode.failure.rawValue)
    }

    /// The whole get on this thread, with blocking calls: no tasks, no
    /// threads, no Dispatch (docs/daemon.md, "The client"). A signal ends
    /// it at once with exit 3, the connection closed (the daemon then
    /// cancels what it was doing for it).
    static func run(service: String, account: String, reason: String?, options: GlobalOptions, socket: String) -> Int32 {
        let interrupt = Interrupt()
        let translation = ErrorTranslation(simulatedReader: options.reader == .simulator, simulatedTPM: options.tpm == .simulator)
        do {
            try get(service: service, account: account, reason: reason, options: options, socket: socket, interrupt: interrupt)
            return ExitCode.success.rawValue
        } catch {
            BlockingTerminal.restoreTerminal()
            let failure = error is CancellationError || interrupt.fired ? .cancelled : translation.failure(for: error)
            failure.report()
            return failure.code.rawValue
        }
    }

    private static func get(service: String, account: String, reason: String?, options: GlobalOptions,
                            socket: String, interrupt: Interrupt) throws {
        let connected: FrameSocket
        do {
            connected = try FrameSocket.connect(to: socket)
        } catch {
            throw DeviceError.daemon(DaemonFailure(.unreachable, socket: socket, reason: error.description))
        }
        defer { connected.shut() }
        let terminal = BlockingTerminal(passcodeDescriptor: options.passcodeFD, interrupt: interrupt)
        let connection = BlockingConnection(socket: connected, terminal: terminal, socketPath: socket,
                                            program: ProcessInfo.processInfo.processName)
        // One call: the daemon reads the item's access, authenticates for
        // it (its prompts come back on the way) and answers with the secret;
        // its failures come as the daemon engine's calls' would.
        let outcome: Outcome<Calls.GetSecret>
        do {
            outcome = try connection.call(Calls.GetSecret(
                service: service, account: account, reason: reason ?? "touchstone get: read the secret of \(service) / \(account)",
                touchTimeout: options.timeout))
        } catch let error as DaemonFailure {
            throw KeychainError.daemon(error)
        }
        let secret: SecureBytes
        switch outcome {
        case .success(let opened): secret = opened.bytes
        case .failure(let error): throw error
        case .refused(let why): throw KeychainError.daemon(DaemonFailure(.refused, socket: socket, reason: why))
        }
        if interrupt.fired { throw CancellationError() }  // a signal just now: write nothing
        do {
            try secret.withUnsafeBytes { bytes in try Output.writeAll(1, bytes) }
        } catch {
            throw CLIFailure(.failure, "cannot write the secret to stdout: \(error)")
        }
    }
}
