internal import CSodium
internal import CTSS2
import TouchstoneSecure

/// The daemon's gate: a TPM object per client user (KEYEDHASH under the
/// SRK: fixedTPM, fixedParent, userWithAuth, noDA) whose authValue only
/// `touchstoned` knows. A `TPM` with a gate installed seals every key with
/// PolicySecret(gate) at the head of each branch (and of the device-bound
/// policy), and peppers every passcode authValue with the gate's pepper: a
/// program with the blobs and the TPM but not the gate's authValue opens
/// nothing and cannot test a passcode against any of them (docs/tpm.md,
/// "The daemon's gate").
package struct TPMGate: Sendable {
    /// The gate object, as TPM2_Create returned it (marshalled TPM2B_PUBLIC,
    /// TPM2B_PRIVATE).
    package let publicArea: [UInt8]
    package let privateArea: [UInt8]
    /// Its name (what PolicySecret extends the policy with).
    package let name: [UInt8]
    /// Its authValue (32 random bytes).
    package let authValue: SecureBytes
    /// Keys every passcode authValue sealed through this gate (32 bytes).
    package let pepper: SecureBytes

    package init(publicArea: [UInt8], privateArea: [UInt8], name: [UInt8], authValue: SecureBytes, pepper: SecureBytes) {
        self.publicArea = publicArea
        self.privateArea = privateArea
        self.name = name
        self.authValue = authValue
        self.pepper = pepper
    }
}

extension TPM {
    /// Creates a gate object with a fresh random authValue and pepper (the
    /// caller stores all of it where only the daemon reads it).
    package func createGate() throws(TPMError) -> TPMGate {
        let gateAuth = SecureBytes.random(count: PasscodeAuth.size)
        let pepper = SecureBytes.random(count: 32)
        return try withContext { ctx throws(TPMError) in
            let srk = try storageRootKey(ctx)
            var inSensitive = TPM2B_SENSITIVE_CREATE()
            defer { wipe(&inSensitive) }
            var data = inSensitive.sensitive.data.buffer
            let filler = SecureBytes.random(count: 32)
            inSensitive.sensitive.data.size = try filler.withUnsafeBytes { bytes in Result { () throws(TPMError) in try fillTuple(&data, with: bytes, what: "gate data") } }.get()
            inSensitive.sensitive.data.buffer = data
            wipe(&data)
            inSensitive.sensitive.userAuth = try authValue(PasscodeAuth(authValue: gateAuth))
            var inPublic = TPM2B_PUBLIC()
            inPublic.publicArea.type = ts_ALG_KEYEDHASH
            inPublic.publicArea.nameAlg = ts_ALG_SHA256
            inPublic.publicArea.objectAttributes = ts_OBJ_FIXEDTPM | ts_OBJ_FIXEDPARENT | ts_OBJ_USERWITHAUTH | ts_OBJ_NODA
            inPublic.publicArea.parameters.keyedHashDetail.scheme.scheme = ts_ALG_NULL
            let created = try create(&inSensitive, &inPublic, under: srk.handle, ctx)
            let loaded = try loadObject(created.publicArea, created.privateArea, under: srk.handle,
                                    unparsable: "the new gate object does not parse", ctx)
            defer { flush(loaded, ctx) }
            return TPMGate(publicArea: created.publicArea, privateArea: created.privateArea, name: try name(of: loaded, ctx),
                           authValue: gateAuth, pepper: pepper)
        }
    }

    /// Runs TPM2_PolicySecret(gate) on `policy`: the gate loaded, its
    /// authValue proved through a salted HMAC session (never in the clear),
    /// flushed again. Three commands more than the policy without it, and a
    /// FlushContext.
    func policySecret(_ gate: TPMGate, on policy: ESYS_TR, _ ctx: OpaquePointer) throws(TPMError) {
        let srk = try storageRootKey(ctx)
        let object = try loadObject(gate.publicArea, gate.privateArea, under: srk.handle,
                                    unparsable: "the daemon's gate object does not parse", ctx)
        defer { flush(object, ctx) }
        try setAuth(object, PasscodeAuth(authValue: gate.authValue), ctx)
        defer { clearAuth(object, ctx) }
        let session = try startSession(ts_SE_HMAC, salted: true, attributes: 0, ctx)
        var timeout: UnsafeMutablePointer<TPM2B_TIMEOUT>?
        var ticket: UnsafeMutablePointer<TPMT_TK_AUTH>?
        let rc = Esys_PolicySecret(ctx, object, policy, session, ESYS_TR_NONE, ESYS_TR_NONE, nil, nil, nil, 0, &timeout, &ticket)
        Esys_Free(timeout)
        Esys_Free(ticket)
        if rc != ts_RC_SUCCESS {
            flush(session, ctx)
            try check(rc, .policySecret, ctx)
        }
    }

    /// The authValue the TPM gets for `passcode`: peppered when a gate is
    /// installed.
    func gated(_ passcode: PasscodeAuth) -> PasscodeAuth {
        guard let gate = installedGate else { return passcode }
        return passcode.peppered(with: gate.pepper)
    }
}

extension PasscodeAuth {
    /// This authValue under keyed BLAKE2b-256 with the daemon's pepper.
    package func peppered(with pepper: SecureBytes) -> PasscodeAuth {
        ensureSodium()
        let out = SecureBytes(count: Self.size)
        out.withUnsafeMutableBytes { dst in
            value.withUnsafeBytes { src in
                pepper.withUnsafeBytes { key in
                    _ = crypto_generichash(dst.baseAddress!.assumingMemoryBound(to: UInt8.self), Self.size,
                                           src.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(src.count),
                                           key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
                }
            }
        }
        return PasscodeAuth(authValue: out)
    }
}
