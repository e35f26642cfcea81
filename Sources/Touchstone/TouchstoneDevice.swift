import Foundation

/// This machine's Touchstone: its vault, its TPM, its fingerprint reader,
/// reached through an engine: the in-process one, or touchstoned's (the
/// daemon engine), as `Configuration.resolvedEngine` says. Open one per
/// process (or per state folder); contexts and the keychain hang off it.
///
/// The reader is opened when a touch is first needed and released by
/// `close()`, or when the device goes; `withDevice` scopes both.
public final class TouchstoneDevice: Sendable {
    package let engine: any Engine

    public var configuration: Configuration { engine.configuration }

    /// Opens the vault (creating the state on first use) with its TPM. The
    /// reader is opened only when a touch is needed.
    public convenience init(configuration: Configuration = Configuration()) async throws(DeviceError) {
        switch configuration.resolvedEngine {
        case .daemon(let socket): self.init(engine: try DaemonEngine.open(configuration, socket: socket))
        case .automatic, .embedded: self.init(engine: try await InProcessEngine.open(configuration))
        }
    }

    package init(engine: any Engine) { self.engine = engine }

    /// Opens a device for `configuration`, runs `body` with it, and closes
    /// it (the reader released) whether `body` returns or throws.
    ///
    /// The device is opened on its engine's thread, and `body`'s own
    /// nonisolated steps run there too (task executor preference), so its
    /// calls to the device need no thread switch. A `body` isolated to an
    /// actor (`@MainActor`) keeps its isolation. Do not block in `body`:
    /// the engine waits for it.
    public static func withDevice<R>(_ configuration: Configuration = Configuration(),
                                     _ body: (TouchstoneDevice) async throws -> R) async throws -> R {
        try await withDevice(configuration, engineOn: nil, body)
    }

    /// The same, an in-process engine running on `loop`'s thread (a
    /// D-Bus connection's: its calls then reach the engine with no thread
    /// switch) instead of a thread of its own. A daemon's device ignores it.
    package static func withDevice<R>(_ configuration: Configuration, engineOn loop: (any EngineLoop)?,
                                      _ body: (TouchstoneDevice) async throws -> R) async throws -> R {
        if case .daemon(let socket) = configuration.resolvedEngine {
            let device = TouchstoneDevice(engine: try DaemonEngine.open(configuration, socket: socket))
            return try await body(device)
        }
        let thread = loop.map(DedicatedThread.hosted(on:)) ?? InProcessEngine.makeThread()
        return try await withTaskExecutorPreference(thread) {
            let device = TouchstoneDevice(engine: try await InProcessEngine.open(configuration, on: thread))
            do {
                let result = try await body(device)
                await device.close()
                return result
            } catch {
                await device.close()
                throw error
            }
        }
    }

    /// The item store, with Keychain semantics.
    public var keychain: Keychain { Keychain(device: self) }

    /// A fresh context: one per authentication (a reused context would
    /// silently skip the prompt).
    public func makeContext() -> AuthenticationContext { AuthenticationContext(engine: engine) }

    /// Releases the reader (so fprintd or another program can have it). It
    /// is opened again when needed.
    public func close() async { await engine.close() }

    // MARK: - Status

    /// What this device has now: reader, TPM, vault, passcode, fingers,
    /// lockout, items. Never prompts.
    public func status() async -> Status {
        do {
            return try await engine.call(Calls.Status()).status
        } catch {
            return DaemonEngine.unreachableStatus(configuration, error)
        }
    }

    /// The status of the device `configuration` describes, reported part by
    /// part even when it cannot be opened (the TPM unreachable, the vault
    /// damaged): `Status.problem` then says why.
    public static func status(of configuration: Configuration) async -> Status {
        if case .daemon(let socket) = configuration.resolvedEngine {
            do {
                return try await DaemonEngine.open(configuration, socket: socket).call(Calls.Status()).status
            } catch {
                return DaemonEngine.unreachableStatus(configuration, error)
            }
        }
        return await InProcessEngine.status(of: configuration)
    }

    // MARK: - Passcode

    public func passcodeIsSet() async throws(DeviceError) -> Bool { try await engine.call(Calls.PasscodeIsSet()) }

    /// Sets the first passcode (refused if one is set).
    public func setPasscode(_ passcode: some ContiguousBytes) async throws(DeviceError) {
        _ = try await engine.call(Calls.SetPasscode(passcode: SecureBytes.wiping(passcode)))
    }

    /// Replaces the passcode (the TPM checks the current one).
    public func changePasscode(from old: some ContiguousBytes, to new: some ContiguousBytes) async throws(DeviceError) {
        _ = try await engine.call(Calls.ChangePasscode(from: SecureBytes.wiping(old), to: SecureBytes.wiping(new)))
    }

    /// Removes the passcode: every finger is unenrolled, and every item that
    /// needs the passcode or biometry becomes unusable. Returns how many
    /// items were deleted (those kept only while a passcode is set).
    @discardableResult
    public func removePasscode(_ passcode: some ContiguousBytes) async throws(DeviceError) -> Int {
        try await engine.call(Calls.RemovePasscode(passcode: SecureBytes.wiping(passcode)))
    }

    // MARK: - Fingers

    /// The enrolled fingers (no reader needed).
    public func enrolledFingers() async throws(DeviceError) -> [Finger] { try await engine.call(Calls.EnrolledFingers()) }

    /// Enrols `finger` (the passcode is checked by the TPM first, before any
    /// touch). `progress` reports stage progress and retry hints, on the
    /// caller's isolation, in order.
    public func enroll(_ finger: Finger, passcode: some ContiguousBytes, timeout: Duration = .seconds(30),
                       isolation: isolated (any Actor)? = #isolation,
                       progress: (ScanEvent) -> Void = { _ in }) async throws(DeviceError) {
        let passcode = SecureBytes.wiping(passcode)
        let (events, continuation) = AsyncStream.makeStream(of: ScanEvent.self)
        let engine = self.engine
        let work = Task(executorPreference: engine.taskExecutor) {
            defer { continuation.finish() }
            _ = try await engine.call(Calls.Enroll(finger, passcode: passcode, timeout: timeout),
                                      interaction: EventRelay { continuation.yield($0) })
        }
        await withTaskCancellationHandler {
            for await event in events { progress(event) }
        } onCancel: {
            work.cancel()
        }
        do { try await work.value } catch { throw error as? DeviceError ?? .authentication(.userCancel) }
    }

    /// Sets how many matching touches of one finger every biometric
    /// authentication takes from now on (`Status.matchingTouches` shows
    /// it). Two touches make a stranger's false match rarer and refuse the
    /// owner more often (docs/fingerprint.md). The passcode is checked
    /// first.
    public func setMatchingTouches(_ touches: MatchingTouches, passcode: some ContiguousBytes) async throws(DeviceError) {
        _ = try await engine.call(Calls.SetMatchingTouches(touches, passcode: SecureBytes.wiping(passcode)))
    }

    /// Removes `finger` (nil: every finger). The passcode is checked first.
    public func unenroll(_ finger: Finger?, passcode: some ContiguousBytes) async throws(DeviceError) {
        _ = try await engine.call(Calls.Unenroll(finger, passcode: SecureBytes.wiping(passcode)))
    }
}
