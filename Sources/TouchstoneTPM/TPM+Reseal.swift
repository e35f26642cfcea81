internal import CTSS2

extension TPM {
    /// Re-seals for a new passcode: TPM2_ObjectChangeAuth (authorised with
    /// the old passcode through a salted HMAC session that also encrypts the
    /// new authValue). The policy, and so the biometric condition recorded
    /// at seal time, stays exactly as it was.
    package func resealForNewPasscode(_ blob: SealedBlob, from old: PasscodeAuth, to new: PasscodeAuth) throws(TPMError) -> SealedBlob {
        guard blob.policy.passcode else { throw TPMError.branchNotAvailable("it has no passcode branch") }
        return try withContext { ctx throws(TPMError) in
            let srk = try storageRootKey(ctx)
            guard blob.srkName == srk.name else { throw TPMError.foreignBlob }
            let item = try load(blob, under: srk.handle, ctx)
            defer { flush(item, ctx) }
            let peppered = blob.policy.gateName != nil
            var newAuth = try authValue(peppered ? gated(new) : new)
            defer { wipe(&newAuth) }
            try setAuth(item, peppered ? gated(old) : old, ctx)
            defer { clearAuth(item, ctx) }
            let session = try startSession(ts_SE_HMAC, salted: true, attributes: ts_SESSION_DECRYPT, ctx)
            var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
            let rc = Esys_ObjectChangeAuth(ctx, item, srk.handle, session, ESYS_TR_NONE, ESYS_TR_NONE, &newAuth, &outPrivate)
            defer { Esys_Free(outPrivate) }
            if rc != ts_RC_SUCCESS {
                flush(session, ctx)
                try check(rc, .objectChangeAuth, ctx)
            }
            guard let outPrivate else { throw TPMError.other(code: 0, text: "TPM2_ObjectChangeAuth returned nothing") }
            var resealed = blob
            resealed.privateArea = try marshal(outPrivate, Tss2_MU_TPM2B_PRIVATE_Marshal)
            return resealed
        }
    }
}
