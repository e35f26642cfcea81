import Foundation
import Glibc
import TestRigs

/// Debian's KeePassXC serving the Secret Service on a test's private bus,
/// headless (Qt's offscreen platform): its own folders under the sandbox's
/// scratch (removed with it), a fresh keepassxc.ini with its Secret Service
/// on and no confirmation dialogs, and databases made by keepassxc-cli with
/// their root group exposed, opened with their password on stdin
/// (scripts/lib/keepassxc.py, which the benchmark shares, says how). It
/// saves only when it stops: KeePassXC 2.7.4 crashes when a store comes
/// while it saves, and the tests store back to back. Ready once each
/// database is an unlocked collection. Stopped by PID.
final class KeePassXC: @unchecked Sendable {
    // @unchecked Sendable: one test's; `process` is only stopped once, from its flow.
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/lib/keepassxc.py").path

    let folder: String
    private var process: RunningCLI?

    /// `databases`: the collections' labels (each one's id is its label in
    /// lower case); the one named last is the `default` alias.
    init(rig: SecretServiceRig, databases: [String]) throws {
        folder = rig.sandbox.scratch + "/keepassxc"
        let password = "keepassxc-password\n"
        let prepared = rig.runBlocking("/usr/bin/python3", [Self.script, "prepare", "--save-on-exit", folder] + databases, stdin: Array(password.utf8))
        let paths = prepared.stdoutText.split(separator: "\n").map(String.init)
        guard prepared.code == 0, paths.count == databases.count else {
            throw RigFailure("KeePassXC's databases were not made: \(prepared.stderr)")
        }
        let started = try rig.start("/usr/bin/python3", [Self.script, "serve", folder] + paths,
                                    stdin: Array(String(repeating: password, count: paths.count).utf8))
        let ready = rig.runBlocking("/usr/bin/python3", [Self.script, "ready", "\(paths.count)"])
        guard ready.code == 0 else {
            // It acts on no SIGTERM that comes before its databases are open.
            started.signal(SIGKILL)
            let result = started.wait(timeout: 30)
            throw RigFailure("KeePassXC did not serve: \(ready.stderr) \(result.stderr)")
        }
        process = started
    }

    /// Stops it (SIGTERM: it saves and closes its databases); its result.
    @discardableResult
    func stop() -> CLIResult? {
        guard let process else { return nil }
        self.process = nil
        process.signal(SIGTERM)
        return process.wait(timeout: 30)
    }
}
