internal import CTSS2

/// The TPM's dictionary-attack (DA) state. The lockout is global to the TPM:
/// it also blocks other users of DA-protected objects, which is why the
/// layers above keep their own failure counter in front of it.
package struct DictionaryAttackState: Equatable, Sendable {
    /// Authorization failures currently counted (TPM2_PT_LOCKOUT_COUNTER).
    package var failedTries: UInt32
    /// Failures that put the TPM in lockout (TPM2_PT_MAX_AUTH_FAIL).
    package var maxTries: UInt32
    /// Seconds after which one failure is forgotten (TPM2_PT_LOCKOUT_INTERVAL).
    package var lockoutInterval: UInt32
    /// Seconds before lockoutAuth may be tried again after it failed
    /// (TPM2_PT_LOCKOUT_RECOVERY).
    package var lockoutRecovery: UInt32

    package var isLockedOut: Bool { maxTries > 0 && failedTries >= maxTries }
}

extension TPM {
    package func dictionaryAttackState() throws(TPMError) -> DictionaryAttackState {
        try withContext { ctx throws(TPMError) in try readDictionaryAttackState(ctx) }
    }

    func readDictionaryAttackState(_ ctx: OpaquePointer) throws(TPMError) -> DictionaryAttackState {
        var more: TPMI_YES_NO = 0
        var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
        try check(Esys_GetCapability(ctx, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ts_CAP_TPM_PROPERTIES,
                                     ts_PT_LOCKOUT_COUNTER, 4, &more, &data), .generic, ctx)
        defer { Esys_Free(data) }
        var state = DictionaryAttackState(failedTries: 0, maxTries: 0, lockoutInterval: 0, lockoutRecovery: 0)
        guard let props = data?.pointee.data.tpmProperties else { return state }
        withUnsafeBytes(of: props.tpmProperty) { raw in
            let list = raw.bindMemory(to: TPMS_TAGGED_PROPERTY.self)
            for p in list.prefix(Int(min(props.count, UInt32(list.count)))) {
                switch p.property {
                case ts_PT_LOCKOUT_COUNTER: state.failedTries = p.value
                case ts_PT_MAX_AUTH_FAIL: state.maxTries = p.value
                case ts_PT_LOCKOUT_INTERVAL: state.lockoutInterval = p.value
                case ts_PT_LOCKOUT_RECOVERY: state.lockoutRecovery = p.value
                default: break
                }
            }
        }
        return state
    }

    /// TPM2_DictionaryAttackParameters on the lockout hierarchy (its auth
    /// must be empty, as on swtpm and most PCs). The simulator sets its own.
    package func setDictionaryAttackParameters(maxTries: UInt32, recoveryTime: UInt32, lockoutRecovery: UInt32) throws(TPMError) {
        try withContext { ctx throws(TPMError) in
            try check(Esys_DictionaryAttackParameters(ctx, ESYS_TR_RH_LOCKOUT, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                                      maxTries, recoveryTime, lockoutRecovery), .generic, ctx)
        }
    }

    /// TPM2_DictionaryAttackLockReset: clears the failure count and lockout
    /// (needs the lockout hierarchy's auth, empty on swtpm).
    package func resetDictionaryAttackLockout() throws(TPMError) {
        try withContext { ctx throws(TPMError) in
            try check(Esys_DictionaryAttackLockReset(ctx, ESYS_TR_RH_LOCKOUT, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE),
                      .generic, ctx)
        }
    }
}
