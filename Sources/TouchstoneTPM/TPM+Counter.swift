internal import CTSS2
import TouchstoneSecure

/// TPM NV counters (TPM_NT_COUNTER): 8 bytes that only go up. Scheme 2
/// binds every key to one: the biometric branch to the enrolment counter,
/// the passcode branch to the passcode counter, each as "counter <= the
/// generation the key was sealed for". One increment per enrolment or
/// passcode change closes every key (and every copy of one) sealed before.
///
/// What makes them an anchor where an ordinary NV index is not (libtpms,
/// NVCommands.c and NV.c; TPM 2.0 Part 1, "NV counters"): NV_Write refuses
/// a counter; the first increment of a counter starts from the highest
/// value any counter on this TPM has had (NvReadMaxCount), and deleting a
/// written counter raises that floor, so a counter undefined and defined
/// again by someone with the owner's (empty) authorization never shows an
/// old value. Not ORDERLY (whose low bits jump after an unclean shutdown);
/// incremented per change, never per unlock (NV wear).
///
/// - Read: owner authorization (OWNERREAD), for PolicyNV; the value is not
///   secret.
/// - Increment: the counter's authValue (AUTHWRITE), which the vault derives
///   from its root key; NO_DA (it is a key, not a guessable passcode).
extension TPM {
    /// Where Touchstone looks for free counters: part of the owner range of
    /// the TCG handle registry, next to the first release's indices.
    package static let counterRange: ClosedRange<UInt32> = 0x0180_5500...0x0180_55FF

    static let counterAttributes: TPMA_NV = ts_NV_TYPE_COUNTER | ts_NV_AUTHWRITE | ts_NV_OWNERREAD | ts_NV_NO_DA

    /// The first handle of `counterRange` not defined on this TPM.
    package func freeCounterIndex() throws(TPMError) -> UInt32 {
        try freeNVIndex(in: Self.counterRange)
    }

    /// Defines a counter at `handle` with `auth` and increments it once (a
    /// counter has no value, and its name not its final form, until then).
    /// Returns its value and its name, which the caller records.
    package func defineCounter(_ handle: UInt32, auth: PasscodeAuth) throws(TPMError) -> (value: UInt64, name: [UInt8]) {
        guard handle >> 24 == 0x01 else {
            throw TPMError.invalidArgument("0x\(String(handle, radix: 16)) is not an NV index handle")
        }
        return try withContext { ctx throws(TPMError) in
            var authValue = try authValue(auth)
            defer { wipe(&authValue) }
            var info = TPM2B_NV_PUBLIC()
            info.nvPublic.nvIndex = handle
            info.nvPublic.nameAlg = ts_ALG_SHA256
            info.nvPublic.attributes = Self.counterAttributes
            info.nvPublic.dataSize = 8
            // Owner auth (empty) through a salted session that also encrypts
            // the new authValue on its way to the TPM.
            let session = try startSession(ts_SE_HMAC, salted: true, attributes: ts_SESSION_DECRYPT, ctx)
            var nv: ESYS_TR = ESYS_TR_NONE
            let rc = ResponseCode(Esys_NV_DefineSpace(ctx, ESYS_TR_RH_OWNER, session, ESYS_TR_NONE, ESYS_TR_NONE,
                                                      &authValue, &info, &nv))
            if !rc.isSuccess {
                flush(session, ctx)
                if rc.isFromTPM && rc.base == ts_RC_NV_DEFINED { throw TPMError.nvIndexInUse(handle: handle) }
                try check(rc.raw, .generic, ctx)
            }
            nvHandles[handle] = nv
            try increment(nv, auth: auth, ctx)
            return (try readCounter(nv, ctx), try name(of: nv, ctx))
        }
    }

    /// The counter's value.
    package func readCounter(_ handle: UInt32) throws(TPMError) -> UInt64 {
        try withContext { ctx throws(TPMError) in try readCounter(nvHandle(handle, ctx), ctx) }
    }

    /// Increments the counter (checked against `expectedName` first, when
    /// given) and returns its new value.
    package func incrementCounter(_ handle: UInt32, auth: PasscodeAuth, expectedName: [UInt8]? = nil) throws(TPMError) -> UInt64 {
        try withContext { ctx throws(TPMError) in
            let nv = try nvHandle(handle, ctx)
            if let expectedName, try name(of: nv, ctx) != expectedName { throw TPMError.nvIndexReplaced(handle: handle) }
            try increment(nv, auth: auth, ctx)
            return try readCounter(nv, ctx)
        }
    }

    /// An NV index's name (nameAlg || H(its public area)).
    package func nvName(_ handle: UInt32) throws(TPMError) -> [UInt8] {
        try withContext { ctx throws(TPMError) in try name(of: nvHandle(handle, ctx), ctx) }
    }

    /// ESYS's record of the NV index at `handle` (its public area and
    /// name), for `adoptNVIndex`: a later process then uses the index
    /// without reading its public area from the TPM first.
    package func nvIndexRecord(_ handle: UInt32) throws(TPMError) -> [UInt8] {
        try withContext { ctx throws(TPMError) in
            let nv = try nvHandle(handle, ctx)
            var buffer: UnsafeMutablePointer<UInt8>?
            var size = 0
            try check(Esys_TR_Serialize(ctx, nv, &buffer, &size), .generic, ctx)
            defer { Esys_Free(buffer) }
            guard let buffer else { return [] }
            return Array(UnsafeBufferPointer(start: buffer, count: size))
        }
    }

    /// Takes the NV index at `handle` as `record` (from `nvIndexRecord`)
    /// describes it, without asking the TPM: the name used is the recorded
    /// one. A policy that names the index then holds only if the TPM's
    /// index has that name (PolicyNV extends the digest with the TPM's own
    /// name of it), so an index replaced since fails at the Unseal.
    /// Nothing happens when the index is known already or the record does
    /// not parse (the TPM is asked when the index is first used).
    package func adoptNVIndex(_ handle: UInt32, record: [UInt8]) {
        _ = try? withContext { ctx throws(TPMError) in
            guard nvHandles[handle] == nil, !record.isEmpty else { return }
            var tr: ESYS_TR = ESYS_TR_NONE
            let rc = record.withUnsafeBufferPointer { Esys_TR_Deserialize(ctx, $0.baseAddress, $0.count, &tr) }
            guard rc == ts_RC_SUCCESS else { return }
            var handleOfRecord: TPM2_HANDLE = 0
            guard Esys_TR_GetTpmHandle(ctx, tr, &handleOfRecord) == ts_RC_SUCCESS, handleOfRecord == handle else {
                _ = Esys_TR_Close(ctx, &tr)
                return
            }
            nvHandles[handle] = tr
        }
    }

    /// The name the TPM gives the index at `handle` now, asked afresh (not
    /// the one this instance may hold from a record); nil when no index is
    /// defined there.
    package func currentNVName(_ handle: UInt32) throws(TPMError) -> [UInt8]? {
        try withContext { ctx throws(TPMError) in
            if let known = nvHandles.removeValue(forKey: handle) {
                var tr = known
                _ = Esys_TR_Close(ctx, &tr)
            }
            do throws(TPMError) { return try name(of: nvHandle(handle, ctx), ctx) } catch TPMError.enrollmentIndexMissing { return nil }
        }
    }

    /// Deletes an NV index (owner authorization).
    package func undefineNVIndex(_ handle: UInt32) throws(TPMError) {
        try withContext { ctx throws(TPMError) in
            let nv = try nvHandle(handle, ctx)
            try check(Esys_NV_UndefineSpace(ctx, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE),
                      .generic, ctx)
            nvHandles[handle] = nil
        }
    }

    // MARK: - Internals

    private func readCounter(_ nv: ESYS_TR, _ ctx: OpaquePointer) throws(TPMError) -> UInt64 {
        var data: UnsafeMutablePointer<TPM2B_MAX_NV_BUFFER>?
        try check(Esys_NV_Read(ctx, ESYS_TR_RH_OWNER, nv, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, 8, 0, &data),
                  .readCounter, ctx)
        defer { Esys_Free(data) }
        guard let bytes = data?.pointee.bytes, bytes.count == 8 else {
            throw TPMError.other(code: 0, text: "the counter did not read as 8 bytes")
        }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    private func increment(_ nv: ESYS_TR, auth: PasscodeAuth, _ ctx: OpaquePointer) throws(TPMError) {
        try setAuth(nv, auth, ctx)
        defer { clearAuth(nv, ctx) }
        let session = try startSession(ts_SE_HMAC, salted: true, attributes: 0, ctx)
        let rc = Esys_NV_Increment(ctx, nv, nv, session, ESYS_TR_NONE, ESYS_TR_NONE)
        if rc != ts_RC_SUCCESS {
            flush(session, ctx)
            try check(rc, .incrementCounter, ctx)
        }
    }
}
