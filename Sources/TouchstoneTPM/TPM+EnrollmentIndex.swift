internal import CTSS2
import TouchstoneSecure

/// The enrolment-state NV index: 32 bytes holding the current domain state
/// (the hash of the enrolled-finger set and a fresh epoch). The biometric
/// branch of every sealed key compares against it with PolicyNV.
///
/// - Read: owner authorization (OWNERREAD; the owner auth must be empty, as
///   it is on almost every PC), so anyone may read the (non-secret) state.
/// - Write: only with the index's authValue (AUTHWRITE), DA protected. The
///   vault derives it from the passcode class key, which the TPM releases
///   only for the passcode (docs/vault.md): a process that does not know
///   the passcode cannot change which enrolment set opens keys, and cannot
///   guess it without tripping the TPM's lockout.
/// - authPolicy: PolicyAuthValue + PolicyCommandCode(NV_ChangeAuth), the
///   only way to change the authValue (the TPM requires a policy session
///   for NV_ChangeAuth), and it needs the current one too.
extension TPM {
    /// The state's size: a SHA-256/BLAKE2b-256 sized value.
    package static let enrollmentStateSize = 32
    /// Where Touchstone looks for a free index: part of the owner range of
    /// the TCG handle registry. One index per user's state directory.
    package static let enrollmentIndexRange: ClosedRange<UInt32> = 0x0180_5400...0x0180_54FF

    static let enrollmentIndexAttributes: TPMA_NV = ts_NV_AUTHWRITE | ts_NV_OWNERREAD  // ordinary type (0), DA protected

    /// The index's authPolicy: PolicyAuthValue, then PolicyCommandCode(NV_ChangeAuth).
    package static func enrollmentIndexPolicy() -> PolicyDigest {
        var d = PolicyDigest()
        d.policyAuthValue()
        d.policyCommandCode(ts_CC_NV_ChangeAuth)
        return d
    }

    /// The first index of `enrolmentIndexRange` not defined on this TPM.
    package func freeEnrollmentIndex() throws(TPMError) -> UInt32 {
        try freeNVIndex(in: Self.enrollmentIndexRange)
    }

    /// The first handle of `range` not defined on this TPM.
    func freeNVIndex(in range: ClosedRange<UInt32>) throws(TPMError) -> UInt32 {
        try withContext { ctx throws(TPMError) in
            var more: TPMI_YES_NO = 0
            var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
            try check(Esys_GetCapability(ctx, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ts_CAP_HANDLES,
                                         range.lowerBound, UInt32(range.count), &more, &data), .generic, ctx)
            defer { Esys_Free(data) }
            var used = Set<UInt32>()
            if let handles = data?.pointee.data.handles {
                withUnsafeBytes(of: handles.handle) { raw in
                    for h in raw.bindMemory(to: TPM2_HANDLE.self).prefix(Int(handles.count)) { used.insert(h) }
                }
            }
            guard let free = range.first(where: { !used.contains($0) }) else {
                throw TPMError.outOfMemory(detail: "every NV index in 0x\(String(range.lowerBound, radix: 16))-0x\(String(range.upperBound, radix: 16)) is in use")
            }
            return free
        }
    }

    /// Defines the index at `handle` with the passcode's authValue and writes
    /// `initialState` to it (an index must be written before PolicyNV can
    /// use it, and its name changes with the first write).
    package func defineEnrollmentIndex(_ handle: UInt32, passcode: PasscodeAuth, initialState: [UInt8]) throws(TPMError) {
        guard handle >> 24 == 0x01 else {
            throw TPMError.invalidArgument("0x\(String(handle, radix: 16)) is not an NV index handle")
        }
        try withContext { ctx throws(TPMError) in
            var auth = try authValue(passcode)
            defer { wipe(&auth) }
            var info = TPM2B_NV_PUBLIC()
            info.nvPublic.nvIndex = handle
            info.nvPublic.nameAlg = ts_ALG_SHA256
            info.nvPublic.attributes = Self.enrollmentIndexAttributes
            info.nvPublic.authPolicy = try TPM2B_DIGEST(bytes: Self.enrollmentIndexPolicy().bytes)
            info.nvPublic.dataSize = UInt16(Self.enrollmentStateSize)
            // Owner auth (empty) through a salted session that also encrypts
            // the new authValue on its way to the TPM.
            let session = try startSession(ts_SE_HMAC, salted: true, attributes: ts_SESSION_DECRYPT, ctx)
            var nv: ESYS_TR = ESYS_TR_NONE
            let rc = ResponseCode(Esys_NV_DefineSpace(ctx, ESYS_TR_RH_OWNER, session, ESYS_TR_NONE, ESYS_TR_NONE,
                                                      &auth, &info, &nv))
            if !rc.isSuccess {
                flush(session, ctx)
                if rc.isFromTPM && rc.base == ts_RC_NV_DEFINED { throw TPMError.nvIndexInUse(handle: handle) }
                try check(rc.raw, .generic, ctx)
            }
            nvHandles[handle] = nv
            try write(state: initialState, to: nv, auth: passcode, ctx)
        }
    }

    /// Whether the index at `handle` exists.
    package func enrollmentIndexExists(_ handle: UInt32) throws(TPMError) -> Bool {
        try withContext { ctx throws(TPMError) in
            do throws(TPMError) { _ = try nvHandle(handle, ctx); return true } catch TPMError.enrollmentIndexMissing { return false }
        }
    }

    /// The index's name (it changes only with the first write).
    package func enrollmentIndexName(_ handle: UInt32) throws(TPMError) -> [UInt8] {
        try withContext { ctx throws(TPMError) in try name(of: nvHandle(handle, ctx), ctx) }
    }

    /// The current domain state.
    package func readEnrollmentState(_ handle: UInt32) throws(TPMError) -> [UInt8] {
        try withContext { ctx throws(TPMError) in
            let nv = try nvHandle(handle, ctx)
            var data: UnsafeMutablePointer<TPM2B_MAX_NV_BUFFER>?
            try check(Esys_NV_Read(ctx, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                   UInt16(Self.enrollmentStateSize), 0, &data), .generic, ctx)
            defer { Esys_Free(data) }
            return data?.pointee.bytes ?? []
        }
    }

    /// Writes a new domain state; the TPM checks the passcode.
    package func writeEnrollmentState(_ handle: UInt32, state: [UInt8], passcode: PasscodeAuth) throws(TPMError) {
        try withContext { ctx throws(TPMError) in try write(state: state, to: nvHandle(handle, ctx), auth: passcode, ctx) }
    }

    /// Changes the index's authValue from the old passcode's to the new one's
    /// (NV_ChangeAuth through the index's policy).
    package func changeEnrollmentIndexPasscode(_ handle: UInt32, from old: PasscodeAuth, to new: PasscodeAuth) throws(TPMError) {
        try withContext { ctx throws(TPMError) in
            let nv = try nvHandle(handle, ctx)
            var newAuth = try authValue(new)
            defer { wipe(&newAuth) }
            let session = try startSession(ts_SE_POLICY, salted: true, attributes: ts_SESSION_DECRYPT, ctx)
            do throws(TPMError) {
                try check(Esys_PolicyAuthValue(ctx, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE), .generic, ctx)
                try check(Esys_PolicyCommandCode(ctx, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ts_CC_NV_ChangeAuth),
                          .generic, ctx)
                try setAuth(nv, old, ctx)
                defer { clearAuth(nv, ctx) }
                try check(Esys_NV_ChangeAuth(ctx, nv, session, ESYS_TR_NONE, ESYS_TR_NONE, &newAuth), .nvChangeAuth, ctx)
            } catch {
                flush(session, ctx)
                throw error
            }
        }
    }

    /// Deletes the index (owner authorization). Every key whose biometric
    /// branch named it can no longer be opened that way, even if an index is
    /// defined again at the same handle: a new state never repeats an old one.
    package func undefineEnrollmentIndex(_ handle: UInt32) throws(TPMError) {
        try withContext { ctx throws(TPMError) in
            let nv = try nvHandle(handle, ctx)
            try check(Esys_NV_UndefineSpace(ctx, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE),
                      .generic, ctx)
            nvHandles[handle] = nil
        }
    }

    // MARK: - Internals

    func nvHandle(_ handle: UInt32, _ ctx: OpaquePointer) throws(TPMError) -> ESYS_TR {
        if let tr = nvHandles[handle] { return tr }
        var tr: ESYS_TR = ESYS_TR_NONE
        let rc = ResponseCode(Esys_TR_FromTPMPublic(ctx, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &tr))
        if rc.isFromTPM && rc.base == ts_RC_HANDLE { throw TPMError.enrollmentIndexMissing(handle: handle) }
        try check(rc.raw, .generic, ctx)
        nvHandles[handle] = tr
        return tr
    }

    private func write(state: [UInt8], to nv: ESYS_TR, auth: PasscodeAuth, _ ctx: OpaquePointer) throws(TPMError) {
        guard state.count == Self.enrollmentStateSize else {
            throw TPMError.invalidArgument("a domain state is \(Self.enrollmentStateSize) bytes, not \(state.count)")
        }
        var data = try TPM2B_MAX_NV_BUFFER(bytes: state)
        try setAuth(nv, auth, ctx)
        defer { clearAuth(nv, ctx) }
        let session = try startSession(ts_SE_HMAC, salted: true, attributes: ts_SESSION_DECRYPT, ctx)
        let rc = Esys_NV_Write(ctx, nv, nv, session, ESYS_TR_NONE, ESYS_TR_NONE, &data, 0)
        if rc != ts_RC_SUCCESS {
            flush(session, ctx)
            try check(rc, .nvWrite, ctx)
        }
    }

    func authValue(_ passcode: PasscodeAuth) throws(TPMError) -> TPM2B_AUTH {
        var auth = TPM2B_AUTH()
        var buffer = auth.buffer
        auth.size = try passcode.value.withUnsafeBytes { bytes in Result { () throws(TPMError) in try fillTuple(&buffer, with: bytes, what: "passcode authValue") } }.get()
        auth.buffer = buffer
        wipe(&buffer)
        return auth
    }

    /// Gives ESYS the authValue for `handle` (it keeps a copy until cleared).
    func setAuth(_ handle: ESYS_TR, _ passcode: PasscodeAuth, _ ctx: OpaquePointer) throws(TPMError) {
        var auth = try authValue(passcode)
        defer { wipe(&auth) }
        try check(Esys_TR_SetAuth(ctx, handle, &auth), .generic, ctx)
    }

    /// Overwrites ESYS's copy of `handle`'s authValue with zeros.
    func clearAuth(_ handle: ESYS_TR, _ ctx: OpaquePointer) {
        var empty = TPM2B_AUTH()
        _ = Esys_TR_SetAuth(ctx, handle, &empty)
    }
}
