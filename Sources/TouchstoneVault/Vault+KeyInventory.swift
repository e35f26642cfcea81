import TouchstoneSecure
import TouchstoneTPM

extension Vault {
    /// Every key of this vault that `proof` reaches, labelled: the root key
    /// (unsealed once more from `tpm`), its three subkeys, every class key,
    /// and the item keys of `accounts` under `service`.
    ///
    /// Internal, for the memory-scan tests (MemoryScanTests in a stopped
    /// `touchstone` process, SecretsInMemoryTests in the test process),
    /// which search memory for each of these keys.
    func keyInventory(tpm: TPM, proof: VaultProof, service: String, accounts: [String]) throws -> [(label: String, key: SecureBytes)] {
        var keys: [(label: String, key: SecureBytes)] = [
            ("root key", try Self.rootKey(db, tpm)), ("metadata key", metadataKey),
            ("lookup key", lookupKey), ("device wrap key", deviceKey),
        ]
        for key in try classKeys().values.sorted(by: { $0.id < $1.id }) {
            keys.append(("class key \(key.id) (\(key.kind?.rawValue ?? "?"))", try openClassKey(key, proof: proof)))
        }
        for account in accounts {
            let (item, access) = try loadAccess(service: service, account: account)
            keys.append(("item key of \(account)",
                         try openItemKey(item, access: access, name: (service, account), proof: proof)))
        }
        return keys
    }
}
