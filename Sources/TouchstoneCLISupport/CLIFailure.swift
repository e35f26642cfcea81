import TouchstoneCommandLine

/// A failure as the command reports it: the exit code, the one-line
/// message (nil for a cancel, which prints nothing) and an optional hint.
package struct CLIFailure: Error {
    package var code: ExitCode
    package var message: String?
    package var hint: String?

    package init(_ code: ExitCode, _ message: String?, hint: String? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
    }

    /// A cancel: exit 3, no text.
    package static let cancelled = CLIFailure(.cancelled, nil)

    /// Prints the error lines (nothing for a cancel).
    package func report() {
        if let message { Output.error(message, hint: hint) }
    }
}
