import Foundation
import Glibc
import TestRigs
import TouchstoneDBus

/// One Secret Service test's world: a CLISandbox (the simulator), a
/// private dbus-daemon as the session bus, `touchstone secret-service` on
/// it, and the real clients (secret-tool, Python's secretstorage and
/// keyring, libsecret through PyGObject, git) run against it. Stopped by
/// PID and removed in `close()`.
final class SecretServiceRig {
    let sandbox: CLISandbox
    let bus: DBusRig
    private(set) var provider: RunningCLI?

    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/secret-service-client.py").path

    /// `daemon`: the simulator with its touchstoned (`sim start --daemon`).
    init(daemon: Bool = false) throws {
        sandbox = try CLISandbox(startSimulator: !daemon)
        if daemon {
            let started = sandbox.run(["sim", "start", "--daemon"])
            guard started.code == 0 else { throw RigFailure("sim start --daemon: \(started.stderr)") }
        }
        bus = try DBusRig()
        sandbox.extraEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        // No dialog unless a test gives one (a touch only).
        sandbox.extraEnvironment["TOUCHSTONE_PINENTRY"] = "/nonexistent/pinentry"
    }

    /// Starts the provider; returns once it owns the name (nil: it did not,
    /// its stderr in `failure`).
    @discardableResult
    func startProvider(_ arguments: [String] = []) throws -> RunningCLI {
        let running = try sandbox.start(["--sim", "secret-service"] + arguments)
        guard running.waitForStderr("serving org.freedesktop.secrets") else {
            let result = running.wait(timeout: 5)
            throw RigFailure("the provider did not start: \(result.stderr)")
        }
        provider = running
        return running
    }

    /// Stops the provider with SIGTERM; its result.
    func stopProvider() -> CLIResult? {
        guard let provider else { return nil }
        self.provider = nil
        provider.signal(SIGTERM)
        return provider.wait(timeout: 60)
    }

    /// Runs another program with the sandbox's environment (the bus included).
    func run(_ program: String, _ arguments: [String], stdin: [UInt8] = [], environment extra: [String: String] = [:],
             timeout: TimeInterval = 120) -> CLIResult {
        do {
            return try start(program, arguments, stdin: stdin, environment: extra).wait(timeout: timeout)
        } catch {
            return CLIResult(code: -1, stdout: [], stderr: "\(error)")
        }
    }

    func start(_ program: String, _ arguments: [String], stdin: [UInt8] = [], environment extra: [String: String] = [:]) throws -> RunningCLI {
        try CLIProcess.start(arguments, stdin: stdin, environment: sandbox.environment.merging(extra) { $1 },
                             scratch: sandbox.scratch, program: program)
    }

    func secretTool(_ arguments: [String], stdin: String = "") -> CLIResult {
        run("/usr/bin/secret-tool", arguments, stdin: Array(stdin.utf8))
    }

    /// A step of Tests/Fixtures/secret-service-client.py.
    func python(_ arguments: [String], stdin: [UInt8] = []) -> CLIResult {
        run("/usr/bin/python3", [Self.client] + arguments, stdin: stdin)
    }

    func startPython(_ arguments: [String]) throws -> RunningCLI {
        try start("/usr/bin/python3", [Self.client] + arguments)
    }

    /// Waits until the provider says it waits for a touch, then touches
    /// with simulated finger `id`.
    func touchWhenAsked(_ id: String, occurrence: Int = 1) -> Bool {
        guard let provider else { return false }
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if provider.stderrSoFar.components(separatedBy: "waiting for a touch").count > occurrence {
                return sandbox.run(["sim", "touch", id, "--wait", "60"]).code == 0
            }
            usleep(20_000)
        }
        return false
    }

    /// The provider's log so far.
    var log: String { provider?.stderrSoFar ?? "" }

    func close() {
        _ = stopProvider()
        bus.close()
        sandbox.close()
    }
}

/// org.freedesktop.Notifications on the test's bus: every Notify's
/// summary and body, recorded.
final class NotificationRecorder: DBusObject, @unchecked Sendable {
    // @unchecked Sendable: `shown` is behind its lock.
    private let lock = NSLock()
    private var shown: [(summary: String, body: String)] = []
    let bus: DBusBus

    static let introspection = """
        <node><interface name="org.freedesktop.Notifications">
          <method name="Notify">
            <arg type="s" direction="in"/><arg type="u" direction="in"/><arg type="s" direction="in"/>
            <arg type="s" direction="in"/><arg type="s" direction="in"/><arg type="as" direction="in"/>
            <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/><arg type="u" direction="out"/>
          </method>
          <method name="CloseNotification"><arg type="u" direction="in"/></method>
        </interface></node>
        """

    init(address: String) async throws {
        bus = try await DBusBus(address: address)
        try await bus.export(self, at: "/org/freedesktop/Notifications", introspection: Self.introspection)
        guard try await bus.requestName("org.freedesktop.Notifications", replace: false) == .owned else {
            throw RigFailure("org.freedesktop.Notifications is taken")
        }
    }

    var notifications: [(summary: String, body: String)] { lock.withLock { shown } }

    func handle(_ call: DBusCall) {
        if call.method == "Notify", call.arguments.count == 8, let summary = call.arguments[3].string, let body = call.arguments[4].string {
            lock.withLock { shown.append((summary, body)) }
            return call.reply([.uint32(UInt32(lock.withLock { shown.count }))])
        }
        call.reply([])
    }

    func property(_ name: String, interface: String, path: String) -> DBusValue? { nil }
}
