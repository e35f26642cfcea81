import Foundation
import Glibc
import TestRigs

/// Debian's git against the built git-credential-touchstone, in a
/// sandbox's world: a global git config of the test's own
/// (GIT_CONFIG_GLOBAL, no system config) naming the helpers, the build
/// folder first on PATH so that `credential.helper touchstone` finds the
/// helper, terminal prompts off (GIT_TERMINAL_PROMPT=0: a credential no
/// helper gave is git's exit 128, never a wait), and TOUCHSTONE_SIM=1 so
/// that the helper, like `touchstone`, takes the simulator from the
/// environment.
struct GitRig {
    let sandbox: CLISandbox
    /// The global git config this rig writes.
    let config: String

    static let git = "/usr/bin/git"
    /// The helper next to the touchstone binary.
    static let helper = URL(fileURLWithPath: CLIProcess.binary).deletingLastPathComponent()
        .appendingPathComponent("git-credential-touchstone").path
    /// A second helper after ours, to show that git asked on when ours gave
    /// nothing: it answers every get with this username and password.
    static let fallback = "!f() { test \"$1\" = get && printf 'username=fallback\\npassword=from-fallback\\n'; }; f"

    /// `helpers` as `credential.helper` values, in order (git asks them in
    /// order until one gives a username and password).
    init(_ sandbox: CLISandbox, helpers: [String], extraConfig: String = "") throws {
        self.sandbox = sandbox
        config = sandbox.root + "/gitconfig"
        var text = "[credential]\n"
        for helper in helpers { text += "\thelper = \(Self.quoted(helper))\n" }
        text += extraConfig
        try text.write(toFile: config, atomically: true, encoding: .utf8)
    }

    /// A config value in git's double quotes.
    private static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    var environment: [String: String] {
        var environment = sandbox.environment
        let bin = URL(fileURLWithPath: Self.helper).deletingLastPathComponent().path
        environment["PATH"] = bin + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        environment["HOME"] = sandbox.root
        environment["GIT_CONFIG_GLOBAL"] = config
        environment["GIT_CONFIG_NOSYSTEM"] = "1"
        environment["GIT_TERMINAL_PROMPT"] = "0"
        environment["TOUCHSTONE_SIM"] = "1"
        return environment
    }

    /// Starts `git arguments` with `stdin` (and `fd3` on descriptor 3,
    /// which git's helpers inherit).
    func start(_ arguments: [String], stdin: [UInt8] = [], fd3: [UInt8]? = nil) throws -> RunningCLI {
        try CLIProcess.start(arguments, stdin: stdin, fd3: fd3, environment: environment, scratch: sandbox.scratch,
                             program: Self.git)
    }

    /// Runs `git arguments` to completion.
    func run(_ arguments: [String], stdin: [UInt8] = [], fd3: [UInt8]? = nil) -> CLIResult {
        do {
            return try start(arguments, stdin: stdin, fd3: fd3).wait()
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// Runs the helper itself, as git would, with `request` on stdin.
    func helper(_ arguments: [String], request: [UInt8]) -> CLIResult {
        do {
            return try CLIProcess.start(arguments, stdin: request, environment: environment, scratch: sandbox.scratch,
                                        program: Self.helper).wait()
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    /// `git credential fill` for `fields`; its output as key=value pairs.
    func fill(_ fields: [String: String]) -> (CLIResult, [String: String]) {
        let result = run(["credential", "fill"], stdin: Self.request(fields))
        return (result, Self.fields(result.stdoutText))
    }

    /// `git credential fill` that waits for a touch, touched with `id`
    /// once the helper asks for it.
    func fill(_ fields: [String: String], touch id: String) -> (CLIResult, [String: String]) {
        guard let waiting = try? start(["credential", "fill"], stdin: Self.request(fields)) else {
            return (CLIResult(code: -1, stdout: [], stderr: "cannot start git"), [:])
        }
        guard waiting.waitForStderr("touch the reader") else {
            let result = waiting.wait()
            return (result, Self.fields(result.stdoutText))
        }
        let touch = sandbox.run(["sim", "touch", id, "--wait", "60"])
        let result = waiting.wait()
        guard touch.code == 0 else {
            return (CLIResult(code: -1, stdout: result.stdout, stderr: "sim touch: \(touch.stderr)\n" + result.stderr), [:])
        }
        return (result, Self.fields(result.stdoutText))
    }

    /// `git credential approve` (git runs every helper's store).
    func approve(_ fields: [String: String]) -> CLIResult {
        run(["credential", "approve"], stdin: Self.request(fields))
    }

    /// `git credential reject` (git runs every helper's erase).
    func reject(_ fields: [String: String]) -> CLIResult {
        run(["credential", "reject"], stdin: Self.request(fields))
    }

    /// The items `touchstone list --json` shows: service, account, access.
    func items() -> [[String: String]] {
        let listed = sandbox.run(["--sim", "list", "--json"])
        let objects = (try? JSONSerialization.jsonObject(with: Data(listed.stdout))) as? [[String: Any]] ?? []
        return objects.map { object in
            var item: [String: String] = [:]
            for key in ["service", "account", "access", "state", "created", "modified", "label"] {
                item[key] = object[key] as? String
            }
            return item
        }
    }

    /// key=value lines, protocol first, then a blank line.
    static func request(_ fields: [String: String]) -> [UInt8] {
        let order = ["protocol", "host", "path", "username", "password"]
        let keys = fields.keys.sorted { (order.firstIndex(of: $0) ?? 99, $0) < (order.firstIndex(of: $1) ?? 99, $1) }
        return Array((keys.map { "\($0)=\(fields[$0]!)\n" }.joined() + "\n").utf8)
    }

    /// key=value lines as a dictionary.
    static func fields(_ text: String) -> [String: String] {
        var fields: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let equals = line.firstIndex(of: "=") else { continue }
            fields[String(line[..<equals])] = String(line[line.index(after: equals)...])
        }
        return fields
    }
}
