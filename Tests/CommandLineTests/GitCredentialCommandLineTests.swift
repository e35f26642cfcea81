import Testing
import TouchstoneCommandLine

/// `git-credential-touchstone`'s command line (GitCredentialCommandLine):
/// what git's `credential.helper "touchstone ..."` values become.
@Suite("git-credential-touchstone's command line")
struct GitCredentialCommandLineTests {
    static func parse(_ arguments: [String], environment: [String: String] = baseEnvironment)
        -> GitCredentialCommandLine.ParseResult {
        GitCredentialCommandLine.parse(arguments: arguments, environment: environment)
    }

    @Test("the operation, --access (default user-presence) and the global options anywhere; the environment as for touchstone")
    func runs() throws {
        guard case .run(.get, let access, let options) = Self.parse(["get"]) else { Issue.record("not a get"); return }
        #expect(access == .userPresence)
        #expect(options.home == "/home/tester/.local/share/touchstone")
        #expect(options.engine == .automatic)

        let parsed = Self.parse(["--access", "biometry-any", "--sim", "store", "--home=/h", "--timeout", "5"])
        guard case .run(.store, let gated, let simulated) = parsed else { Issue.record("\(parsed)"); return }
        #expect(gated == (try AccessControl(parsing: "biometry-any")))
        #expect(simulated.usesSimulator && simulated.home == "/h" && simulated.timeout == .seconds(5))

        let environment = ["HOME": "/home/tester", "TOUCHSTONE_SIM": "1", "TOUCHSTONE_DAEMON": "/run/x.sock"]
        guard case .run(.erase, _, let fromEnvironment) = Self.parse(["erase"], environment: environment) else {
            Issue.record("not an erase"); return
        }
        #expect(fromEnvironment.usesSimulator)
        #expect(fromEnvironment.engine == .daemon(socket: "/run/x.sock"))
        guard case .run(_, _, let embedded) = Self.parse(["--embedded", "erase"], environment: environment) else {
            Issue.record("not a run"); return
        }
        #expect(embedded.engine == .embedded)
    }

    @Test("an operation of a newer git is .ignore, not an error; help and version win")
    func ignoreHelpVersion() {
        #expect(Self.parse(["capabilities"]) == .ignore("capabilities"))
        guard case .help(let text) = Self.parse(["--access", "nonsense", "get", "--help"]) else { Issue.record("no help"); return }
        #expect(text.contains("USAGE: git-credential-touchstone [--access <spec>]"))
        #expect(text.contains("--passcode-fd <n>") && !text.contains("--json"))
        #expect(Self.parse(["--version"]) == .version("git-credential-touchstone \(CommandLineParser.version)"))
    }

    @Test("usage errors", arguments: [
        (["get", "--passcode-fd", "0"], "stdin carries git's request, so --passcode-fd cannot be 0"),
        (["--json", "get"], "unknown option '--json'"),
        (["--label", "x", "get"], "unknown option '--label'"),
        (["--access", "face-id", "store"], "invalid --access 'face-id'"),
        (["--access"], "missing value for '--access <spec>'"),
        (["--sim=1", "get"], "'--sim' takes no value"),
        ([], "missing operation"),
        (["get", "store"], "unexpected argument 'store'"),
        (["--embedded", "--daemon", "/s", "get"], "--embedded and --daemon exclude each other"),
    ])
    func usageErrors(_ arguments: [String], _ message: String) {
        guard case .usageError(let got, let usage) = Self.parse(arguments) else {
            Issue.record("\(arguments): not a usage error"); return
        }
        #expect(got.contains(message), "\(got)")
        #expect(usage == GitCredentialCommandLine.usage)
    }

    @Test("--passcode-fd other than 0 is taken")
    func passcodeDescriptor() {
        guard case .run(_, _, let options) = Self.parse(["--passcode-fd", "3", "get"]) else { Issue.record("not a run"); return }
        #expect(options.passcodeFD == 3)
    }
}
