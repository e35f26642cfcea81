// The touchstone command: TouchstoneCommandLine parses the command line
// (../shared/cli-contract.md); only `demo` runs so far, the other commands
// are wired to the Keychain later.
import Foundation
import TouchstoneCommandLine

/// Writes one line to stderr.
func printError(_ line: String) {
    FileHandle.standardError.write(Data((line + "\n").utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch CommandLineParser.parse(arguments: arguments, environment: ProcessInfo.processInfo.environment) {
case .help(let text):
    print(text)
case .version(let version):
    print(version)
case .usageError(let message, let usage):
    printError("touchstone: error: \(message)")
    printError("usage: \(usage)")
    exit(ExitCode.usage.rawValue)
case .run(.demo, _):
    exit(await BackendDemo.run())
case .run(let command, _):
    printError("touchstone: error: '\(command.name)' is not implemented yet")
    exit(ExitCode.failure.rawValue)
}
