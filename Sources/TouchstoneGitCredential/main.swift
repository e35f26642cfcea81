// git-credential-touchstone: a git credential helper (gitcredentials(7))
// over Touchstone's vault; docs/git.md. git runs it with the operation as
// its last argument and the request on stdin; `get` answers on stdout.
import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

// Files and sockets this process creates are private to the user.
umask(0o077)

let arguments = Array(CommandLine.arguments.dropFirst())
switch GitCredentialCommandLine.parse(arguments: arguments, environment: ProcessInfo.processInfo.environment) {
case .help(let text):
    Output.result(text)
case .version(let version):
    Output.result(version)
case .usageError(let message, let usage):
    Output.error(message)
    Output.progress("usage: \(usage)")
    exit(ExitCode.usage.rawValue)
case .ignore:
    // An operation of a newer git: ignored silently, as gitcredentials(7) asks.
    exit(ExitCode.success.rawValue)
case .run(let operation, let access, let options):
    let code = await CredentialRunner.run(operation, access: access, options: options)
    TestHooks.stopBeforeExitIfAsked()
    exit(code)
}
