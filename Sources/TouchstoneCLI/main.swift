// The touchstone command (docs/cli.md): TouchstoneCommandLine parses;
// CommandRunner runs the command against the Touchstone library.
import Foundation
import Touchstone
import TouchstoneCLISupport
import TouchstoneCommandLine

// Files and sockets this process (and the swtpm it starts) creates are
// private to the user: directories 0700, files 0600.
umask(0o077)

let arguments = Array(CommandLine.arguments.dropFirst())
switch CommandLineParser.parse(arguments: arguments, environment: ProcessInfo.processInfo.environment) {
case .help(let text):
    Output.result(text)
case .version(let version):
    Output.result(version)
case .usageError(let message, let usage):
    Output.error(message)
    Output.progress("usage: \(usage)")
    exit(ExitCode.usage.rawValue)
case .run(.demo, _):
    do {
        try await BackendWalkthrough.run { Output.result($0) }
        exit(ExitCode.success.rawValue)
    } catch {
        Output.error("\(error)")
        exit(ExitCode.failure.rawValue)
    }
case .run(let command, let options):
    let code = await CommandRunner.run(command, options)
    TestHooks.stopBeforeExitIfAsked()
    exit(code)
}
