// The touchstone command. Its full interface (../shared/cli-contract.md)
// arrives with the CLI issue; today it runs the backend demo.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments {
case ["demo"]:
    exit(await BackendDemo.run())
case ["-h"], ["--help"], ["help"]:
    print("""
        OVERVIEW: Touchstone: fingerprint- and TPM-protected secrets for Linux.

        USAGE: touchstone demo

        SUBCOMMANDS:
          demo    Seal a key on a private swtpm and open it with a simulated finger or the passcode.
        """)
default:
    FileHandle.standardError.write(Data("""
        touchstone: error: only `touchstone demo` exists so far
        usage: touchstone demo

        """.utf8))
    exit(64)
}
