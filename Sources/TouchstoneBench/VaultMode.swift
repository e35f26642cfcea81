import TouchstoneTPM
import TouchstoneVault

/// The two ways the vault is measured.
enum VaultMode: String, Codable, CaseIterable {
    /// Items with access `none`: sealed to the device key, which derives
    /// from the root key unsealed once when the vault opens. No TPM command
    /// per add or get.
    case tpmExcluded = "TPM excluded"
    /// Items with access `passcode`, read with the passcode: each get
    /// unseals the passcode class key on the TPM. Adding needs no TPM.
    case tpmIncluded = "TPM included"

    var access: AccessControl { self == .tpmExcluded ? .none : .devicePasscode }

    var tag: String { self == .tpmExcluded ? "none" : "passcode" }

    func proof(_ passcode: PasscodeAuth) -> VaultProof {
        self == .tpmExcluded ? .none : VaultProof(passcode: passcode)
    }
}
