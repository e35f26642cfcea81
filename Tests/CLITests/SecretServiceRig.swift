import Foundation
import Glibc
import TestRigs
import TouchstoneDBus
import TouchstoneModel

/// One Secret Service test's world: a CLISandbox (the simulator), a
/// private dbus-daemon as the session bus, `touchstone secret-service` on
/// it, and the real clients (secret-tool, Python's secretstorage and
/// keyring, libsecret through PyGObject, git) run against it. Stopped by
/// PID and removed in `close()`.
final class SecretServiceRig: @unchecked Sendable {
    // @unchecked Sendable: one test's, used from its flow (its blocking
    // steps run off the cooperative pool, one at a time).
    let sandbox: CLISandbox
    let bus: DBusRig
    private(set) var provider: RunningCLI?

    static let client = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/secret-service-client.py").path

    /// `daemon`: the simulator with its touchstoned (`sim start --daemon`).
    init(daemon: Bool = false) throws {
        sandbox = try CLISandbox(startSimulator: !daemon)
        // The provider's clock (and the daemon's) in debug builds: a test
        // moves it on with `advanceClock` instead of sleeping.
        sandbox.extraEnvironment["TOUCHSTONE_TEST_CLOCK_FILE"] = sandbox.root + "/clock"
        if daemon {
            let started = sandbox.run(["sim", "start", "--daemon"])
            guard started.code == 0 else { throw RigFailure("sim start --daemon: \(started.stderr)") }
        }
        bus = try DBusRig()
        sandbox.extraEnvironment["DBUS_SESSION_BUS_ADDRESS"] = bus.address
        // No dialog unless a test gives one (a touch only).
        sandbox.extraEnvironment["TOUCHSTONE_PINENTRY"] = "/nonexistent/pinentry"
        // A touch the test gives once it sees the prompt comes however slow
        // the machine: the wait for it is no window a test checks (those
        // tests give --timeout themselves), only a bound for a hang.
        sandbox.extraEnvironment["TOUCHSTONE_TIMEOUT"] = "300"
    }

    /// A rig made off the cooperative pool (it starts the simulator), given
    /// to `body`, and closed after it, whether it returns or throws.
    static func with(daemon: Bool = false, _ body: (SecretServiceRig) async throws -> Void) async throws {
        let rig = try await offPool { try SecretServiceRig(daemon: daemon) }
        do {
            try await body(rig)
        } catch {
            await rig.closeOffPool()
            throw error
        }
        await rig.closeOffPool()
    }

    // MARK: The blocking steps, awaited (each on a thread of its own)

    @discardableResult
    func startProvider(_ arguments: [String] = []) async throws -> RunningCLI {
        try await offPool { try self.startProviderBlocking(arguments) }
    }

    func stopProvider() async -> CLIResult? { try? await offPool { self.stopProviderBlocking() } }
    func cli(_ arguments: [String], stdin: [UInt8] = [], timeout: TimeInterval = 120) async -> CLIResult {
        await result { self.sandbox.run(arguments, stdin: stdin, timeout: timeout) }
    }
    func setPasscode() async -> CLIResult { await result { self.sandbox.setPasscode() } }
    func enroll(_ finger: String, as id: String) async -> CLIResult { await result { self.sandbox.enroll(finger, as: id) } }
    func run(_ program: String, _ arguments: [String], stdin: [UInt8] = [], environment extra: [String: String] = [:]) async -> CLIResult {
        await result { self.runBlocking(program, arguments, stdin: stdin, environment: extra) }
    }
    func secretTool(_ arguments: [String], stdin: String = "") async -> CLIResult {
        await run("/usr/bin/secret-tool", arguments, stdin: Array(stdin.utf8))
    }
    func python(_ arguments: [String], stdin: [UInt8] = []) async -> CLIResult {
        await run("/usr/bin/python3", [Self.client] + arguments, stdin: stdin)
    }
    func wait(_ running: RunningCLI, timeout: TimeInterval = 120) async -> CLIResult {
        await result { running.wait(timeout: timeout) }
    }
    func touchWhenAsked(_ id: String, occurrence: Int = 1) async -> Bool {
        (try? await offPool { self.touchWhenAskedBlocking(id, occurrence: occurrence) }) ?? false
    }
    /// Whether the provider's stderr came to hold `text` within a minute.
    func waitForLog(_ text: String) async -> Bool {
        guard let provider else { return false }
        return (try? await offPool { provider.waitForStderr(text) }) ?? false
    }
    func closeOffPool() async { _ = try? await offPool { self.close() } }

    private func result(_ body: @escaping @Sendable () -> CLIResult) async -> CLIResult {
        (try? await offPool(body)) ?? CLIResult(code: -1, stdout: [], stderr: "the step did not run")
    }

    // MARK: Blocking

    /// Starts the provider; returns once it owns the name.
    @discardableResult
    func startProviderBlocking(_ arguments: [String] = []) throws -> RunningCLI {
        let running = try sandbox.start(["--sim", "secret-service"] + arguments)
        guard running.waitForStderr("serving org.freedesktop.secrets") else {
            let result = running.wait(timeout: 5)
            throw RigFailure("the provider did not start: \(result.stderr)")
        }
        provider = running
        return running
    }

    /// Stops the provider with SIGTERM; its result.
    func stopProviderBlocking() -> CLIResult? {
        guard let provider else { return nil }
        self.provider = nil
        provider.signal(SIGTERM)
        return provider.wait(timeout: 60)
    }

    /// Runs another program with the sandbox's environment (the bus included).
    func runBlocking(_ program: String, _ arguments: [String], stdin: [UInt8] = [], environment extra: [String: String] = [:],
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

    func startPython(_ arguments: [String]) throws -> RunningCLI {
        try start("/usr/bin/python3", [Self.client] + arguments)
    }

    /// Waits until the provider says it waits for a touch (the
    /// `occurrence`th time), then touches with simulated finger `id`.
    func touchWhenAskedBlocking(_ id: String, occurrence: Int = 1) -> Bool {
        guard let provider else { return false }
        return Self.touchWhenAsked(provider, on: sandbox, id, occurrence: occurrence)
    }

    /// `touchWhenAskedBlocking` for any provider (`provider`, running on
    /// `sandbox`'s simulator: another Touchstone as an import's source).
    static func touchWhenAsked(_ provider: RunningCLI, on sandbox: CLISandbox, _ id: String, occurrence: Int) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if provider.stderrSoFar.components(separatedBy: "waiting for a touch").count > occurrence {
                return sandbox.run(["sim", "touch", id, "--wait", "60"]).code == 0
            }
            usleep(20_000)
        }
        return false
    }

    /// Moves the provider's clock (and the daemon's) on by `seconds`, where
    /// it then stands (`TestClockFile`).
    func advanceClock(_ seconds: Double) throws {
        let file = sandbox.root + "/clock"
        try TestClockFile.advanced(file, by: seconds).write(toFile: file, atomically: true, encoding: .utf8)
    }

    /// The provider's log so far.
    var log: String { provider?.stderrSoFar ?? "" }

    func close() {
        _ = stopProviderBlocking()
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

// @unchecked Sendable: a process handle one test owns; its steps run one at
// a time, some of them off the cooperative pool.
extension RunningCLI: @unchecked Sendable {}
