internal import CTSS2
import Foundation
import Synchronization
import TouchstoneSecure

/// A TPM 2.0 reached through tpm2-tss (ESYS) over an explicit TCTI.
///
/// One instance holds one connection; every public method is serialised by
/// an internal `Mutex` (ESYS contexts are not thread-safe). When the connection
/// is lost (swtpm stopped, device gone) the method throws `.unreachable` and
/// the next call reconnects, so a restarted TPM is picked up without a new
/// instance.
///
/// Every transient object and session a method creates is flushed before it
/// returns, on success and on every error path: swtpm and TPMs without a
/// resource manager would otherwise run out of slots (TPM_RC_OBJECT_MEMORY).
package final class TPM: @unchecked Sendable {
    // @unchecked Sendable: all mutable state is guarded by `lock` (a
    // Mutex over no value: the state is read by the helpers a locked
    // operation calls, which take the ESYS context, not the state).

    /// The default TCTI: the kernel's resource-managed TPM device.
    package static let defaultTCTI = "device:/dev/tpmrm0"
    /// The storage root key's persistent handle (TCG registry: the SRK).
    package static let srkHandle: UInt32 = 0x81000001

    package let tcti: String
    /// When set, the SRK found at `srkHandle` must have this name, or every
    /// operation fails with `.storageKeyMismatch` (the state was made with
    /// another TPM, or the SRK was replaced).
    package var expectedSRKName: [UInt8]? {
        lock.withLock { _ in pinnedSRKName }
    }
    private var pinnedSRKName: [UInt8]?

    private let lock = Mutex(())
    private var connection: TCTIConnection?
    private let operationLock: SwtpmOperationLock?
    private var closedCommandCount = 0
    private var srk: (handle: ESYS_TR, name: [UInt8])?
    /// The daemon's gate for this user, when the daemon opened this TPM:
    /// every key sealed through this instance needs it (TPM+Gate.swift).
    package let installedGate: TPMGate?
    var nvHandles: [UInt32: ESYS_TR] = [:]  // guarded by `lock`

    /// Opens the TPM at `tcti` (never a NULL or empty config: that would fall
    /// through to anything listening on localhost:2321).
    package init(tcti: String = TPM.defaultTCTI, expectedSRKName: [UInt8]? = nil, gate: TPMGate? = nil) throws(TPMError) {
        self.tcti = tcti
        installedGate = gate
        pinnedSRKName = expectedSRKName
        operationLock = SwtpmOperationLock(tcti: tcti)
        connection = try TCTIConnection(tcti: tcti)
    }

    /// TPM commands sent by this instance so far (across reconnections).
    package var commandCount: Int {
        lock.withLock { _ in closedCommandCount + (connection?.commandCount ?? 0) }
    }

    /// Pins the SRK by name (a state folder's record of it): from now on the
    /// key at `srkHandle` must have this name, and its shape is not read
    /// again (one TPM command less per connection). A key already found
    /// with another name is refused at once.
    package func pinStorageKey(name: [UInt8]) throws(TPMError) {
        try lock.withLock { _ throws(TPMError) in
            if let srk, srk.name != name {
                throw TPMError.storageKeyMismatch(detail: "the key at 0x81000001 is not the one this state was made with (another TPM, or the TPM was cleared)")
            }
            pinnedSRKName = name
        }
    }

    /// Runs `body` with a live ESYS context, connecting first if needed.
    /// A transport failure drops the connection so the next call reconnects.
    /// For a swtpm, every process takes `SwtpmOperationLock` around each
    /// operation: swtpm has no resource manager, so two processes' loaded
    /// objects would otherwise fill its three slots (TPM_RC_OBJECT_MEMORY).
    func withContext<R>(_ body: (OpaquePointer) throws(TPMError) -> R) throws(TPMError) -> R {
        // Mutex.withLock's result is `sending`: the result leaves through
        // an optional the closure fills, so `R` need not be Sendable.
        var result: R?
        try lock.withLock { _ throws(TPMError) in
            if let operationLock {
                try operationLock.withTurn { () throws(TPMError) in try runConnected(body, into: &result) }
            } else {
                try runConnected(body, into: &result)
            }
        }
        return result!
    }

    /// `withContext`'s work under `lock` (and the operation lock when
    /// there is one): connects if needed, runs `body`, drops the
    /// connection on a transport failure.
    private func runConnected<R>(_ body: (OpaquePointer) throws(TPMError) -> R, into result: inout R?) throws(TPMError) {
        if connection == nil {
            connection = try TCTIConnection(tcti: tcti)
        }
        do throws(TPMError) {
            do throws(TPMError) {
                result = try body(connection!.esys)
            } catch .outOfMemory where operationLock != nil {
                // A swtpm has no resource manager: a process killed in the
                // middle of an operation leaves its loaded objects and
                // sessions behind, and they fill the TPM's few slots. We
                // hold the operation lock, so nothing loaded now belongs to
                // a live operation: flush it all and try once more.
                flushOrphans(connection!.esys)
                result = try body(connection!.esys)
            }
        } catch {
            if case .unreachable = error { dropConnection() }
            throw error
        }
    }

    /// Flushes every transient object and loaded session on the TPM. Only
    /// for a swtpm, under the operation lock (see `withContext`).
    private func flushOrphans(_ ctx: OpaquePointer) {
        for first: UInt32 in [0x8000_0000, 0x0200_0000] {  // TPM2_TRANSIENT_FIRST, TPM2_LOADED_SESSION_FIRST
            var more: TPMI_YES_NO = 0
            var data: UnsafeMutablePointer<TPMS_CAPABILITY_DATA>?
            guard Esys_GetCapability(ctx, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ts_CAP_HANDLES,
                                     first, 64, &more, &data) == ts_RC_SUCCESS, let data else { continue }
            defer { Esys_Free(data) }
            let list = data.pointee.data.handles
            let handles = withUnsafeBytes(of: list.handle) { Array($0.bindMemory(to: TPM2_HANDLE.self).prefix(Int(list.count))) }
            // Loaded sessions come back as 0x02 (HMAC) or 0x03 (policy) handles.
            for handle in handles where handle >> 24 == first >> 24 || (first == 0x0200_0000 && handle >> 24 == 0x03) {
                var tr: ESYS_TR = ESYS_TR_NONE
                if Esys_TR_FromTPMPublic(ctx, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &tr) == ts_RC_SUCCESS {
                    _ = Esys_FlushContext(ctx, tr)
                }
            }
        }
    }

    private func dropConnection() {
        closedCommandCount += connection?.commandCount ?? 0
        connection = nil
        srk = nil
        nvHandles = [:]
    }

    /// Throws the typed error for `rc` unless it is success. Lockout errors
    /// carry the TPM's recovery interval, read on the spot.
    func check(_ rc: TSS2_RC, _ operation: TPMOperation, _ ctx: OpaquePointer) throws(TPMError) {
        let code = ResponseCode(rc)
        guard !code.isSuccess else { return }
        throw TPMError.from(code, during: operation, recovery: {
            (try? self.readDictionaryAttackState(ctx))?.lockoutInterval
        })
    }

    /// Flushes a transient object or session, ignoring failures: it runs on
    /// cleanup paths, where the original error is the one to report.
    func flush(_ handle: ESYS_TR, _ ctx: OpaquePointer) {
        guard handle != ESYS_TR_NONE else { return }
        _ = Esys_FlushContext(ctx, handle)
    }

    // MARK: - Shutdown

    /// TPM2_Shutdown(CLEAR): an orderly shutdown, so that stopping a swtpm
    /// afterwards neither loses state nor counts as a DA failure.
    package func shutdown() throws(TPMError) {
        try withContext { ctx throws(TPMError) in
            try check(Esys_Shutdown(ctx, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ts_SU_CLEAR), .generic, ctx)
        }
    }

    // MARK: - Storage root key

    /// The SRK's name (nameAlg || H(public)): what a state directory pins.
    package func storageKeyName() throws(TPMError) -> [UInt8] {
        try withContext { ctx throws(TPMError) in try storageRootKey(ctx).name }
    }

    /// The SRK: found at `srkHandle` and checked, or created from the TCG
    /// template (ECC P-256 storage primary in the owner hierarchy) and made
    /// persistent. Cached for the life of the connection.
    func storageRootKey(_ ctx: OpaquePointer) throws(TPMError) -> (handle: ESYS_TR, name: [UInt8]) {
        if let srk { return srk }
        var handle: ESYS_TR = ESYS_TR_NONE
        let rc = ResponseCode(Esys_TR_FromTPMPublic(ctx, Self.srkHandle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &handle))
        if rc.isSuccess {
            let name = try self.name(of: handle, ctx)
            if let pinnedSRKName {
                guard name == pinnedSRKName else {
                    throw TPMError.storageKeyMismatch(detail: "the key at 0x81000001 is not the one this state was made with (another TPM, or the TPM was cleared)")
                }
            } else {
                try checkSRKShape(handle, ctx)
            }
            srk = (handle, name)
            return (handle, name)
        }
        guard rc.isFromTPM, rc.base == ts_RC_HANDLE else {
            try check(rc.raw, .connect, ctx)
            throw TPMError.other(code: rc.raw, text: rc.text)
        }
        if pinnedSRKName != nil {
            throw TPMError.storageKeyMismatch(detail: "no storage key at 0x81000001 (another TPM, or the TPM was cleared)")
        }
        let created = try createPersistentSRK(ctx)
        srk = created
        return created
    }

    static func srkTemplate() -> TPM2B_PUBLIC {
        var pub = TPM2B_PUBLIC()
        pub.publicArea.type = ts_ALG_ECC
        pub.publicArea.nameAlg = ts_ALG_SHA256
        pub.publicArea.objectAttributes = ts_OBJ_FIXEDTPM | ts_OBJ_FIXEDPARENT | ts_OBJ_SENSITIVEDATAORIGIN
            | ts_OBJ_USERWITHAUTH | ts_OBJ_NODA | ts_OBJ_RESTRICTED | ts_OBJ_DECRYPT
        pub.publicArea.parameters.eccDetail.symmetric.algorithm = ts_ALG_AES
        pub.publicArea.parameters.eccDetail.symmetric.keyBits.aes = 128
        pub.publicArea.parameters.eccDetail.symmetric.mode.aes = ts_ALG_CFB
        pub.publicArea.parameters.eccDetail.scheme.scheme = ts_ALG_NULL
        pub.publicArea.parameters.eccDetail.curveID = ts_ECC_NIST_P256
        pub.publicArea.parameters.eccDetail.kdf.scheme = ts_ALG_NULL
        return pub
    }

    private func checkSRKShape(_ handle: ESYS_TR, _ ctx: OpaquePointer) throws(TPMError) {
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        var name: UnsafeMutablePointer<TPM2B_NAME>?
        var qualified: UnsafeMutablePointer<TPM2B_NAME>?
        try check(Esys_ReadPublic(ctx, handle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &outPublic, &name, &qualified), .generic, ctx)
        defer { Esys_Free(outPublic); Esys_Free(name); Esys_Free(qualified) }
        let want = Self.srkTemplate().publicArea
        guard let have = outPublic?.pointee.publicArea,
              have.type == want.type, have.nameAlg == want.nameAlg,
              have.objectAttributes == want.objectAttributes,
              have.authPolicy.size == 0,
              have.parameters.eccDetail.symmetric.algorithm == ts_ALG_AES,
              have.parameters.eccDetail.symmetric.keyBits.aes == 128,
              have.parameters.eccDetail.symmetric.mode.aes == ts_ALG_CFB,
              have.parameters.eccDetail.curveID == ts_ECC_NIST_P256 else {
            throw TPMError.storageKeyMismatch(detail: "the key at 0x81000001 is not an ECC P-256 storage key of the TCG template; Touchstone will not replace it")
        }
    }

    private func createPersistentSRK(_ ctx: OpaquePointer) throws(TPMError) -> (handle: ESYS_TR, name: [UInt8]) {
        var inPublic = Self.srkTemplate()
        var inSensitive = TPM2B_SENSITIVE_CREATE()
        var outsideInfo = TPM2B_DATA()
        var creationPCR = TPML_PCR_SELECTION()
        var transient: ESYS_TR = ESYS_TR_NONE
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        var creationData: UnsafeMutablePointer<TPM2B_CREATION_DATA>?
        var creationHash: UnsafeMutablePointer<TPM2B_DIGEST>?
        var ticket: UnsafeMutablePointer<TPMT_TK_CREATION>?
        try check(Esys_CreatePrimary(ctx, ESYS_TR_RH_OWNER, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                     &inSensitive, &inPublic, &outsideInfo, &creationPCR,
                                     &transient, &outPublic, &creationData, &creationHash, &ticket), .generic, ctx)
        Esys_Free(outPublic); Esys_Free(creationData); Esys_Free(creationHash); Esys_Free(ticket)
        defer { flush(transient, ctx) }
        var persistent: ESYS_TR = ESYS_TR_NONE
        let rc = ResponseCode(Esys_EvictControl(ctx, ESYS_TR_RH_OWNER, transient, ESYS_TR_PASSWORD, ESYS_TR_NONE,
                                                ESYS_TR_NONE, Self.srkHandle, &persistent))
        if rc.isFromTPM && rc.base == ts_RC_NV_DEFINED {
            // Another process made it persistent first: use theirs.
            var handle: ESYS_TR = ESYS_TR_NONE
            try check(Esys_TR_FromTPMPublic(ctx, Self.srkHandle, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &handle), .generic, ctx)
            try checkSRKShape(handle, ctx)
            return (handle, try name(of: handle, ctx))
        }
        try check(rc.raw, .generic, ctx)
        return (persistent, try name(of: persistent, ctx))
    }

    func name(of handle: ESYS_TR, _ ctx: OpaquePointer) throws(TPMError) -> [UInt8] {
        var name: UnsafeMutablePointer<TPM2B_NAME>?
        try check(Esys_TR_GetName(ctx, handle, &name), .generic, ctx)
        defer { Esys_Free(name) }
        return name?.pointee.bytes ?? []
    }

    // MARK: - Sessions

    static let aes128CFB: TPMT_SYM_DEF = {
        var sym = TPMT_SYM_DEF()
        sym.algorithm = ts_ALG_AES
        sym.keyBits.aes = 128
        sym.mode.aes = ts_ALG_CFB
        return sym
    }()

    /// Starts a session. `salted` sessions are salted with the SRK (so their
    /// key is unknown to anyone on the bus) and may encrypt parameters.
    /// `attributes` excludes CONTINUESESSION: the session ends with the
    /// first command it authorises, so success paths need no extra flush.
    func startSession(_ type: TPM2_SE, salted: Bool, attributes: TPMA_SESSION, _ ctx: OpaquePointer) throws(TPMError) -> ESYS_TR {
        let tpmKey = salted ? try storageRootKey(ctx).handle : ESYS_TR_NONE
        var sym = salted ? Self.aes128CFB : { var s = TPMT_SYM_DEF(); s.algorithm = ts_ALG_NULL; return s }()
        var session: ESYS_TR = ESYS_TR_NONE
        try check(Esys_StartAuthSession(ctx, tpmKey, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE,
                                        nil, type, &sym, ts_ALG_SHA256, &session), .generic, ctx)
        let rc = Esys_TRSess_SetAttributes(ctx, session, attributes, 0xff)
        if rc != ts_RC_SUCCESS {
            flush(session, ctx)
            try check(rc, .generic, ctx)
        }
        return session
    }

    // MARK: - PCRs

    /// The SHA-256 bank's PCR 7 (Secure Boot policy).
    package func readPCR7() throws(TPMError) -> [UInt8] {
        try withContext { ctx throws(TPMError) in try readPCR7(ctx) }
    }

    func readPCR7(_ ctx: OpaquePointer) throws(TPMError) -> [UInt8] {
        var selection = Self.pcr7Selection()
        var counter: UInt32 = 0
        var selectionOut: UnsafeMutablePointer<TPML_PCR_SELECTION>?
        var values: UnsafeMutablePointer<TPML_DIGEST>?
        try check(Esys_PCR_Read(ctx, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &selection, &counter, &selectionOut, &values), .generic, ctx)
        defer { Esys_Free(selectionOut); Esys_Free(values) }
        guard let values, values.pointee.count == 1 else {
            throw TPMError.other(code: 0, text: "the TPM has no SHA-256 PCR 7")
        }
        return values.pointee.digests.0.bytes
    }

    static func pcr7Selection() -> TPML_PCR_SELECTION {
        var selection = TPML_PCR_SELECTION()
        selection.count = 1
        selection.pcrSelections.0.hash = ts_ALG_SHA256
        selection.pcrSelections.0.sizeofSelect = 3
        selection.pcrSelections.0.pcrSelect.0 = 0x80
        return selection
    }
}
