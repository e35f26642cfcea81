import Foundation
internal import CSodium
import TouchstoneSecure

/// ssh keys: ECC P-256 signing keys that the TPM makes and keeps (the
/// private key never leaves it: no call returns it), each used under an
/// access control as an item's secret is read (docs/ssh.md).
public struct SSHKeys: Sendable {
    /// The longest key name, in UTF-8 bytes.
    public static let maximumNameSize = 256

    let device: TouchstoneDevice
    var engine: any Engine { device.engine }

    /// Makes a new key in the TPM (no authentication, as adding an item);
    /// any access but `none` needs a passcode set. Its public half is in
    /// the result.
    public func create(name: String, comment: String = "", access: AccessControl = .userPresence) async throws(KeychainError) -> SSHKeyInfo {
        try await engine.call(Calls.CreateSSHKey(name: name, comment: comment, access: access))
    }

    /// Every key's public half, metadata and state (no authentication).
    public func list() async throws(KeychainError) -> [SSHKeyInfo] {
        try await engine.call(Calls.SSHKeys())
    }

    /// Deletes the key (no authentication); its TPM blob goes with it.
    public func delete(name: String) async throws(KeychainError) {
        _ = try await engine.call(Calls.DeleteSSHKey(name: name))
    }

    /// An ECDSA P-256 signature of SHA-256(`data`), made by the TPM with the
    /// key `name` after the authentication its access control asks for,
    /// through `context` (a fresh one of this device if none is given).
    /// Only the ways in that are still open are offered.
    public func sign(_ data: some ContiguousBytes, name: String, context: AuthenticationContext? = nil,
                     reason: String) async throws(KeychainError) -> SSHSignature {
        let digest = data.withUnsafeBytes { bytes in
            var out = [UInt8](repeating: 0, count: 32)
            ensureSodium()
            crypto_hash_sha256(&out, bytes.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
            return out
        }
        return try await engine.operation { () async throws(KeychainError) in
            let access = try await engine.call(Calls.SSHKeyOpenAccess(name: name))
            var grant: (any EngineGrant)?
            if !access.flags.isEmpty {
                let context = context ?? device.makeContext()
                guard context.belongs(to: engine) else { throw .authentication(.invalidContext) }
                do throws(AuthenticationError) {
                    grant = try await context.grant(for: access, reason: reason)
                } catch {
                    throw KeychainError(error)
                }
            }
            return try await engine.call(Calls.SignSSH(name: name, digest: digest, grant: grant))
        }
    }
}

extension TouchstoneDevice {
    /// The ssh keys, made and kept by the TPM.
    public var sshKeys: SSHKeys { SSHKeys(device: self) }
}
