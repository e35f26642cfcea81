import Foundation
import TouchstonePOSIX
import TouchstoneSecure

/// What `importEmbeddedVault` did.
public struct VaultImportReport: Sendable, Hashable, Encodable {
    /// Items now in the daemon's vault, with their attributes (dates
    /// included) and access controls.
    public var items: Int
    /// The enrolled fingers, now the daemon's.
    public var fingers: [Finger]
    /// Items left out: those no way opens any more (invalidated), and
    /// records that do not decrypt (nil attributes).
    public var leftOut: [ListedItem]
    /// What became of the embedded vault.
    public var embedded: EmbeddedVault

    public enum EmbeddedVault: String, Sendable, Hashable, Encodable {
        /// Marked as moved: it still lists and opens with --embedded (not
        /// through biometry, which needs its failure count written), and
        /// refuses every change.
        case readOnly
        /// Its database removed.
        case removed
    }
}

extension TouchstoneDevice {
    /// Moves the embedded vault that `source` names into this device's
    /// daemon, proved by its passcode: the passcode, the enrolled prints
    /// and every item that still opens, with its attributes and access
    /// control. The daemon must hold no vault for this user yet (no
    /// passcode, no item). Nothing is taken from the embedded vault until
    /// everything is in the daemon's; if a step fails, what was added to
    /// the daemon is taken out again and the embedded vault is untouched.
    /// Then it is made read-only, or removed with `removing`.
    public func importEmbeddedVault(from source: Configuration, passcode: some ContiguousBytes,
                                    removing: Bool = false) async throws(DeviceError) -> VaultImportReport {
        guard let daemon = engine as? DaemonEngine else {
            throw .storage(StorageFailure(.stateFolder, "an import moves an embedded vault into touchstoned, and this device is not a daemon's",
                                          fix: "choose the daemon: --daemon PATH, or start it"))
        }
        let passcode = SecureBytes.wiping(passcode)
        let hasPasscode = try await daemon.call(Calls.PasscodeIsSet())
        let items = try await Self.keychainCall { () async throws(KeychainError) in try await daemon.call(Calls.Items(service: nil)) }
        if hasPasscode || !items.isEmpty {
            throw .storage(StorageFailure(.stateFolder, "touchstoned already holds a vault for this user; an import goes only into an empty one",
                                          fix: "remove the daemon's passcode and items first, or keep using --embedded"))
        }
        var embeddedConfiguration = source
        embeddedConfiguration.engine = .embedded
        let embedded = try await InProcessEngine.open(embeddedConfiguration)
        defer { Task { await embedded.close() } }
        let export = try await embedded.export(passcode: passcode)

        var added: [ItemAttributes] = []
        do throws(DeviceError) {
            _ = try await daemon.call(Calls.SetPasscode(passcode: passcode))
            if let reader = export.reader, !export.prints.isEmpty {
                _ = try await daemon.call(Calls.ImportFingers(
                    driver: reader.driver, deviceID: reader.deviceID, fingers: export.prints.map(\.finger),
                    prints: export.prints.map { SecureBytes(copying: $0.data) }, passcode: passcode))
            }
            for (attributes, secret) in export.items {
                try await Self.keychainCall { () async throws(KeychainError) in _ = try await daemon.call(Calls.Add(secret, attributes: attributes)) }
                added.append(attributes)
            }
        } catch {
            // Take out what went in; the embedded vault was not touched.
            for attributes in added {
                _ = try? await Self.keychainCall { () async throws(KeychainError) in
                    _ = try await daemon.call(Calls.Delete(service: attributes.service, account: attributes.account))
                }
            }
            _ = try? await daemon.call(Calls.RemovePasscode(passcode: passcode))
            throw error
        }
        // From now on this state folder's automatic engine is the daemon,
        // reachable or not: never the embedded vault again.
        let marker = DaemonSocket.movedMarker(home: source.home.path)
        if !FileManager.default.createFile(atPath: marker, contents: Data("moved into touchstoned by touchstone import\n".utf8),
                                           attributes: [.posixPermissions: 0o600]) {
            throw .storage(StorageFailure(.stateFolder, "imported, but \(marker) could not be written"))
        }
        let fate: VaultImportReport.EmbeddedVault
        if removing {
            fate = try Self.remove(source.home)
        } else {
            try await embedded.retire()
            fate = .readOnly
        }
        return VaultImportReport(items: export.items.count, fingers: export.prints.map(\.finger),
                                 leftOut: export.leftOut, embedded: fate)
    }

    private static func keychainCall<R>(_ body: () async throws(KeychainError) -> R) async throws(DeviceError) -> R {
        do {
            return try await body()
        } catch {
            switch error {
            case .daemon(let failure): throw .daemon(failure)
            case .authentication(let failure): throw .authentication(failure)
            case .storage(let failure): throw .storage(failure)
            case .tpm(let failure): throw .tpm(failure)
            default: throw .corrupted(error.message ?? "\(error)")
            }
        }
    }

    /// The embedded vault's database, removed after an import.
    private static func remove(_ home: URL) throws(DeviceError) -> VaultImportReport.EmbeddedVault {
        for name in ["vault.sqlite", "vault.sqlite-wal", "vault.sqlite-shm"] {
            let file = home.appendingPathComponent(name).path
            guard FileManager.default.fileExists(atPath: file) else { continue }
            do {
                _ = try valueOrErrno(retryOnInterrupt: false) { unlink(file) }
            } catch {
                throw .storage(StorageFailure(.stateFolder, "imported, but \(file) could not be removed: \(error)"))
            }
        }
        return .removed
    }
}
