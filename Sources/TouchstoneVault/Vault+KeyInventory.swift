#if TOUCHSTONE_TEST_SUPPORT
import TouchstoneSecure
import TouchstoneTPM

extension Vault {
    /// Every key of this vault that `proof` reaches, labelled: the root key
    /// (unsealed once more from `tpm`), its subkeys (seven, and two more for
    /// AES-256-GCM rows where the CPU has AES-NI), the salted passcode
    /// authValue when `proof` holds the passcode, every class key, and the
    /// item keys of `accounts` under `service` (those that have one).
    ///
    /// Internal, for the memory-scan tests (MemoryScanTests in a stopped
    /// `touchstone` process, SecretsInMemoryTests in the test process),
    /// which search memory for each of these keys.
    func keyInventory(tpm: TPM, proof: VaultProof, service: String, accounts: [String]) throws(VaultError) -> [(label: String, key: SecureBytes)] {
        let root = try Self.rootKey(db, tpm)
        var keys: [(label: String, key: SecureBytes)] = [
            ("root key", root), ("metadata key", metadataKey), ("lookup key", lookupKey), ("device wrap key", deviceKey),
        ]
        keys += [("fingers key", fingersKey.material), ("domain-state key", domainStateKey),
                 ("enrolment counter authValue", enrollmentCounterAuth.value),
                 ("passcode counter authValue", passcodeCounterAuth.value)]
        if RecordCipher.aesAvailable {
            for purpose in ["metadata", "device-wrap"] {
                keys.append(("\(purpose) key (AES-256-GCM)", Crypto.subkey(root, CipherKeys.aesPurpose(purpose))))
            }
        }
        if let passcode = proof.passcode, isPasscodeSet {
            keys.append(("salted passcode authValue", passcode.salted(with: try passcodeSalt()).value))
        }
        for key in try classKeys().values.sorted(by: { $0.id < $1.id }) where !key.sealed.isEmpty {
            keys.append(("class key \(key.id) (\(key.kind?.rawValue ?? "?"))", try openClassKey(key, proof: proof)))
        }
        for account in accounts {
            // (An access-none item has none: its secret is sealed to the device key.)
            let (item, attributes) = try load(service: service, account: account)
            if let itemKey = try openItemKey(item, access: attributes.access, name: (service, account), proof: proof) {
                keys.append(("item key of \(account)", itemKey))
            }
        }
        return keys
    }

    /// The authValue of the ssh key `name`, opened with `proof` (nil for a
    /// key whose policy has no PolicyAuthValue branch): for the memory scans.
    func sshAuthValue(name: String, proof: VaultProof) throws(VaultError) -> SecureBytes? {
        let (row, info) = try loadSSHKey(name)
        guard let authAccess = Self.authAccess(info.access) else { return nil }
        return try openItemKey(row.signingKey(name).asItem, access: authAccess, name: ("ssh key", name), proof: proof)
    }
}
#endif
