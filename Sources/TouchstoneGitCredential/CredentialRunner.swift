import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

/// Runs one operation to its exit status, as `touchstone`'s CommandRunner
/// does: the request read and checked first, then the operation in a task
/// that Ctrl-C and SIGTERM cancel (exit 3, no error text, the reader
/// released); errors reported with the contract's exit codes. git ignores
/// a helper's exit status, so a failed `get` lets git ask the next helper
/// or the person, and the message on stderr says why.
enum CredentialRunner {
    static func run(_ operation: GitCredentialCommandLine.Operation, access: AccessControl,
                    options: GlobalOptions) async -> Int32 {
        let signals = SignalCancellation()  // before anything can wait
        let task = Task.detached { await execute(operation, access: access, options: options) }
        signals.onSignal { task.cancel() }
        let code = await task.value
        return signals.wasSignalled ? ExitCode.cancelled.rawValue : code
    }

    private static func execute(_ operation: GitCredentialCommandLine.Operation, access: AccessControl,
                                options: GlobalOptions) async -> Int32 {
        let translation = ErrorTranslation(simulatedReader: options.reader == .simulator,
                                           simulatedTPM: options.tpm == .simulator)
        let helper = CredentialHelper(options: options, access: access)
        var failure: CLIFailure?
        do {
            let request = try CredentialRequest.readStandardInput()
            switch operation {
            case .get: try await helper.get(request)
            case .store: try await helper.store(request)
            case .erase: try await helper.erase(request)
            }
        } catch {
            failure = translation.failure(for: error)
        }
        guard var failure else { return ExitCode.success.rawValue }
        if Task.isCancelled { failure = .cancelled }
        failure.report()
        return failure.code.rawValue
    }
}
