import Foundation
import TouchstoneFingerprint
import TouchstoneSecure
import TouchstoneTPM
import TouchstoneVault

/// This machine's Touchstone: its TPM, its vault, its fingerprint reader.
/// Open one per process (or per state folder); contexts and the keychain
/// hang off it.
public final class TouchstoneDevice: @unchecked Sendable {
    // @unchecked Sendable: `reader` is guarded by `lock`; the rest is
    // immutable or serialises itself.
    public let configuration: Configuration
    public let tpm: TPM
    public let vault: Vault
    let store: FileEnrollmentStore
    private let lock = NSLock()
    private var reader: (backend: LibfprintReader, enrollment: FingerprintEnrollment)?
    private var readerClaim: VirtualReaderClaim?

    /// Opens the TPM and the vault (creating the state on first use). The
    /// reader is opened only when a touch is needed.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        do {
            tpm = try TPM(tcti: configuration.tcti)
        } catch let error as TPMError {
            throw VaultError.tpm(error)
        }
        vault = try Vault(home: configuration.home, tpm: tpm)
        do {
            store = try FileEnrollmentStore(root: configuration.home.appendingPathComponent("prints"))
        } catch {
            throw VaultError.storage("the enrolment store: \(error)")
        }
    }

    /// The item store, with Keychain semantics.
    public var keychain: Keychain { Keychain(device: self) }

    /// A fresh context: one per authentication (a reused context would
    /// silently skip the prompt).
    public func makeContext() -> AuthenticationContext { AuthenticationContext(device: self) }

    /// Releases the reader (so fprintd or another program can have it).
    public func close() async {
        let (open, claim) = lock.withLock { () -> (LibfprintReader?, VirtualReaderClaim?) in
            defer { reader = nil; readerClaim = nil }
            return (reader?.backend, readerClaim)
        }
        await open?.close()
        claim?.release()
    }

    // MARK: - Reader

    /// The fingerprint reader, opened on first use.
    func fingerprint() async throws -> FingerprintEnrollment {
        if let open = lock.withLock({ reader }) { return open.enrollment }
        let backend: LibfprintReader
        var claim: VirtualReaderClaim?
        switch configuration.reader {
        case .virtual(let socket):
            // libfprint's virtual reader takes its socket over from any
            // process that has it open: claim it first, as a USB reader
            // is claimed, and report busy when another process holds it.
            claim = try VirtualReaderClaim(socket: socket)
            backend = LibfprintReader(virtualReaders: .init(device: socket))
        case .auto, .id: backend = LibfprintReader()
        }
        let readers: [ReaderInfo]
        do { readers = try await backend.readers() } catch {
            claim?.release()
            throw error
        }
        let chosen: ReaderInfo?
        switch configuration.reader {
        case .virtual: chosen = readers.first { $0.driver == "virtual_device" }
        case .auto: chosen = readers.first
        case .id(let id): chosen = readers.first { $0.identity.description == id || $0.deviceID == id }
        }
        guard let info = chosen else {
            await backend.close()
            claim?.release()
            throw FingerprintError.notAvailable(reason: readers.isEmpty ? "no fingerprint reader found" : "reader not found")
        }
        do {
            try await backend.open(info.identity)
        } catch {
            await backend.close()
            claim?.release()
            throw error
        }
        let enrollment = FingerprintEnrollment(backend: backend, store: store, user: configuration.user, reader: info)
        lock.withLock {
            reader = (backend, enrollment)
            readerClaim = claim
        }
        return enrollment
    }

    /// The reader the fingers were enrolled on, as recorded.
    func enrolledReader() throws -> ReaderIdentity? {
        guard let text = try vault.setting("reader"), let slash = text.firstIndex(of: "/") else { return nil }
        return ReaderIdentity(driver: String(text[..<slash]), deviceID: String(text[text.index(after: slash)...]))
    }

    // MARK: - Passcode

    public var isPasscodeSet: Bool { vault.isPasscodeSet }

    /// Sets the first passcode (refused if one is set).
    public func setPasscode(_ passcode: SecureBytes) throws {
        guard passcode.count > 0 else { throw VaultError.invalidInput("the passcode is empty") }
        try vault.setPasscode(PasscodeAuth(passcode: passcode), domainState: Self.freshState())
    }

    /// Replaces the passcode (the TPM checks the current one).
    public func changePasscode(from old: SecureBytes, to new: SecureBytes) throws {
        guard new.count > 0 else { throw VaultError.invalidInput("the new passcode is empty") }
        try vault.changePasscode(from: PasscodeAuth(passcode: old), to: PasscodeAuth(passcode: new))
    }

    /// Removes the passcode: every finger is unenrolled, and every item that
    /// needs the passcode or biometry becomes unusable. Returns how many
    /// items were deleted (those kept only while a passcode is set).
    @discardableResult
    public func removePasscode(_ passcode: SecureBytes) async throws -> Int {
        let deleted = try vault.removePasscode(PasscodeAuth(passcode: passcode))
        if let reader = try enrolledReader() {
            for finger in (try? store.fingers(user: configuration.user, reader: reader)) ?? [] {
                try? store.remove(finger, user: configuration.user, reader: reader)
            }
        }
        if let open = lock.withLock({ reader }), open.enrollment.reader.storesPrintsOnDevice {
            for finger in (try? open.enrollment.enrolledFingers()) ?? [] { try? await open.enrollment.remove(finger) }
        }
        try vault.setSetting("reader", nil)
        return deleted
    }

    static func freshState() -> [UInt8] { SecureBytes.random(count: 32).withUnsafeBytes { Array($0) } }

    // MARK: - Fingers

    /// The enrolled fingers (no reader needed).
    public func enrolledFingers() throws -> [Finger] {
        guard let reader = try enrolledReader() else { return [] }
        return try store.fingers(user: configuration.user, reader: reader)
    }

    /// Enrols `finger` (the passcode is checked by the TPM first, before any
    /// touch). `events` reports stage progress and retry hints.
    public func enroll(_ finger: Finger, passcode: SecureBytes, timeout: Duration = .seconds(30),
                       events: @escaping ScanEventHandler = { _ in }) async throws {
        try vault.requireWritable()
        let auth = PasscodeAuth(passcode: passcode)
        try vault.verifyPasscode(auth)
        let enrollment = try await fingerprint()
        if let recorded = try enrolledReader(), recorded != enrollment.reader.identity,
           !(try store.fingers(user: configuration.user, reader: recorded)).isEmpty {
            throw VaultError.invalidInput("fingers are enrolled on another reader (\(recorded)); unenroll them first")
        }
        try await enrollment.enroll(finger, timeout: timeout, events: events)
        try vault.setSetting("reader", enrollment.reader.identity.description)
        try recordEnrolmentChange(enrollment, auth)
    }

    /// Removes `finger` (nil: every finger). The passcode is checked first.
    public func unenroll(_ finger: Finger?, passcode: SecureBytes) async throws {
        try vault.requireWritable()
        let auth = PasscodeAuth(passcode: passcode)
        try vault.verifyPasscode(auth)
        guard let recorded = try enrolledReader() else { throw FingerprintError.nothingEnrolled }
        let fingers = try store.fingers(user: configuration.user, reader: recorded)
        if let finger, !fingers.contains(finger) { throw FingerprintError.notEnrolled(finger) }
        let doomed = finger.map { [$0] } ?? fingers
        guard !doomed.isEmpty else { throw FingerprintError.nothingEnrolled }
        // Host-side prints go without the reader; match-on-chip prints need it.
        let open = lock.withLock { reader }
        for f in doomed {
            if let open, open.enrollment.reader.identity == recorded {
                try await open.enrollment.remove(f)
            } else {
                try store.remove(f, user: configuration.user, reader: recorded)
                try store.setEpoch(.random(count: 32), user: configuration.user, reader: recorded)
            }
        }
        let state = try domainState(reader: recorded) ?? Self.freshState()
        try vault.enrolmentChanged(to: state, passcode: auth)
    }

    private func recordEnrolmentChange(_ enrollment: FingerprintEnrollment, _ auth: PasscodeAuth) throws {
        let state = try enrollment.domainState().map { $0.withUnsafeBytes { Array($0) } } ?? Self.freshState()
        try vault.enrolmentChanged(to: state, passcode: auth)
    }

    func domainState(reader: ReaderIdentity) throws -> [UInt8]? {
        guard let epoch = try store.epoch(user: configuration.user, reader: reader) else { return nil }
        let prints = try store.fingers(user: configuration.user, reader: reader).map {
            try store.load($0, user: configuration.user, reader: reader)
        }
        return DomainState.compute(reader: reader, prints: prints, epoch: epoch).withUnsafeBytes { Array($0) }
    }
}
