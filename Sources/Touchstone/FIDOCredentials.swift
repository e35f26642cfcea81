import Foundation

/// FIDO credentials (docs/fido.md): P-256 signing keys that the TPM makes
/// and keeps, each for one relying party (a website, or an ssh
/// application), signing assertions whose flags say what the person did
/// for that signature: user present after a touch (or the passcode), user
/// verified after a finger match or the passcode when verification was
/// asked. Every assertion asks anew: no reuse window, no grant.
public struct FIDOCredentials: Sendable {
    let device: TouchstoneDevice
    var engine: any Engine { device.engine }

    /// Makes a new credential in the TPM (no authentication, as adding an
    /// item; the passcode must be set and the access is never `none`). A
    /// discoverable credential for a relying party and user that have one
    /// is refused (`duplicateItem`) unless `replace`.
    public func create(_ request: FIDOCredentialRequest, replace: Bool = false) async throws(KeychainError) -> FIDOCredentialInfo {
        try await engine.call(Calls.CreateFIDOCredential(request, replace: replace))
    }

    /// The credentials, of `relyingParty` when given (no authentication).
    public func list(relyingParty: String? = nil) async throws(KeychainError) -> [FIDOCredentialInfo] {
        try await engine.call(Calls.FIDOCredentials(relyingParty: relyingParty))
    }

    /// Deletes the credential; the passcode is checked by the engine.
    public func delete(id: [UInt8], passcode: SecureBytes) async throws(KeychainError) {
        _ = try await engine.call(Calls.DeleteFIDOCredential(id: id, passcode: passcode))
    }

    /// Deletes the credential `id` of `relyingParty` after what its
    /// signatures need (a touch, or the passcode where its access allows
    /// one), asked through `interaction` (credential management, as an
    /// authenticator offers it).
    public func delete(id: [UInt8], relyingParty: String, reason: String, interaction: (any AuthenticationInteraction)?,
                       touchTimeout: Duration = .seconds(30)) async throws(KeychainError) {
        let call = Calls.DeleteFIDOCredentialByTouch(id: id, relyingParty: relyingParty, reason: reason, interactionNotAllowed: false,
                                                     touchTimeout: touchTimeout)
        _ = try await engine.operation { () async throws(KeychainError) in
            try await engine.call(call, interaction: interaction)
        }
    }

    /// Changes the user name and display name of the credential `id` of
    /// `relyingParty` after what its signatures need, asked through
    /// `interaction` (credential management's updateUserInformation).
    public func updateUser(id: [UInt8], relyingParty: String, userName: String, userDisplayName: String, reason: String,
                           interaction: (any AuthenticationInteraction)?, touchTimeout: Duration = .seconds(30)) async throws(KeychainError) {
        let call = Calls.UpdateFIDOUser(id: id, relyingParty: relyingParty, userName: userName, userDisplayName: userDisplayName,
                                        reason: reason, interactionNotAllowed: false, touchTimeout: touchTimeout)
        _ = try await engine.operation { () async throws(KeychainError) in
            try await engine.call(call, interaction: interaction)
        }
    }

    /// The authenticator's reset: every FIDO credential but OpenSSH's
    /// (`ssh:` applications) deleted, after the passcode, asked through
    /// `interaction`; how many were deleted.
    public func reset(reason: String, interaction: (any AuthenticationInteraction)?) async throws(KeychainError) -> Int {
        let call = Calls.ResetFIDO(reason: reason, interactionNotAllowed: false, touchTimeout: .seconds(60))
        return try await engine.operation { () async throws(KeychainError) in
            try await engine.call(call, interaction: interaction)
        }
    }

    /// An assertion by the credential `id` (of `relyingParty`: another's
    /// is not found) over `clientDataHash` (the
    /// SHA-256 of what the client signs: WebAuthn's client data, ssh's
    /// message), after the touch its access asks, through `interaction`.
    /// `userVerification`: the user-verified flag is wanted (a credential
    /// made `verificationRequired` always wants it).
    /// `extensions`: the authenticator's extension outputs (a CBOR map),
    /// signed in the authenticator data. `hmacSecret`: the hmac-secret
    /// extension's salts and PIN/UV auth protocol 2's shared secret (its
    /// encrypted outputs are added to the extensions, for a credential
    /// made with it).
    public func assert(id: [UInt8], relyingParty: String, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]? = nil,
                       hmacSecret: (salts: [UInt8], sharedSecret: SecureBytes)? = nil, reason: String,
                       interaction: (any AuthenticationInteraction)?, touchTimeout: Duration = .seconds(30)) async throws(KeychainError) -> FIDOAssertion {
        let request = Calls.AssertFIDO(id: id, relyingParty: relyingParty, clientDataHash: clientDataHash, userVerification: userVerification,
                                       extensions: extensions, hmacSecret: hmacSecret.map { ($0.salts, $0.sharedSecret) },
                                       reason: reason, interactionNotAllowed: false, touchTimeout: touchTimeout)
        return try await engine.operation { () async throws(KeychainError) in
            try await engine.call(request, interaction: interaction)
        }
    }

    /// A WebAuthn registration: a new credential and its attestation (its
    /// first assertion, over `clientDataHash`, carrying the credential)
    /// after the touch its access asks; nothing is kept when the touch
    /// fails. A discoverable credential replaces the relying party's and
    /// user's others once attested.
    public func make(_ request: FIDOCredentialRequest, clientDataHash: [UInt8], userVerification: Bool, extensions: [UInt8]? = nil, reason: String,
                     interaction: (any AuthenticationInteraction)?, touchTimeout: Duration = .seconds(30)) async throws(KeychainError) -> FIDOMadeCredential {
        let call = Calls.MakeFIDOCredential(request, clientDataHash: clientDataHash, userVerification: userVerification, extensions: extensions,
                                            reason: reason, interactionNotAllowed: false, touchTimeout: touchTimeout)
        return try await engine.operation { () async throws(KeychainError) in
            try await engine.call(call, interaction: interaction)
        }
    }
}

extension TouchstoneDevice {
    /// The FIDO credentials, made and kept by the TPM.
    public var fido: FIDOCredentials { FIDOCredentials(device: self) }
}
