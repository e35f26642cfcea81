// touchstone-get: `touchstone get` through a daemon, in a process that
// loads neither libfprint nor tpm2-tss (docs/daemon.md, "The client").
// The `touchstone` dispatcher hands it a get when a daemon's socket is
// there; anything else (another command, the embedded engine) it hands on
// to touchstone-cli, the whole command, with the same arguments.
import FoundationEssentials
import Glibc
import TouchstoneClient
import TouchstoneCLISupport
import TouchstoneCommandLine

umask(0o077)
let arguments = Array(CommandLine.arguments.dropFirst())
guard case .run(.get(let service, let account, let reason), let options)
        = CommandLineParser.parse(arguments: arguments, environment: ProcessInfo.processInfo.environment),
      let socket = DaemonGet.socket(for: options) else {
    DaemonGet.handOn()
}
exit(DaemonGet.run(service: service, account: account, reason: reason, options: options, socket: socket))
