internal import CTSS2
import TouchstoneSecure

extension TPM {
    /// Largest key the TPM will seal (TPM2B_SENSITIVE_DATA as KEYEDHASH data).
    package static let maximumKeySize = 128

    /// Seals `key` under `policy`. `passcode` is required when the policy has
    /// the passcode branch; it becomes the object's authValue (never sent in
    /// the clear: the Create goes through a salted, encrypting session).
    ///
    /// The object: KEYEDHASH, FIXEDTPM | FIXEDPARENT, no USERWITHAUTH (a
    /// policy session is always needed), DA protected.
    ///
    /// `expectedNames`: the names the NV indices the policy names had when
    /// they were defined (by handle). An index whose name differs now was
    /// replaced by someone else: `nvIndexReplaced`, and nothing is sealed to it.
    ///
    /// With a gate installed (daemon mode), every branch needs the gate's
    /// PolicySecret and the passcode's authValue is peppered.
    package func seal(_ key: SecureBytes, policy requested: SealPolicy, passcode: PasscodeAuth? = nil,
                      expectedNames: [UInt32: [UInt8]] = [:]) throws(TPMError) -> SealedBlob {
        var policy = requested
        policy.gateName = installedGate?.name
        guard (1...Self.maximumKeySize).contains(key.count) else {
            throw TPMError.invalidArgument("a sealed key is 1 to \(Self.maximumKeySize) bytes, not \(key.count)")
        }
        if policy.passcode && passcode == nil {
            throw TPMError.invalidArgument("the passcode branch needs the passcode at seal time")
        }
        return try withContext { ctx throws(TPMError) in
            let bound = try bind(policy, expectedNames: expectedNames, use: .unseal, ctx)
            let srk = bound.srk
            let (nvName, passcodeNVName, pcr7, authPolicy) = (bound.nvName, bound.passcodeNVName, bound.pcr7, bound.authPolicy)

            var inSensitive = TPM2B_SENSITIVE_CREATE()
            defer { wipe(&inSensitive) }
            var data = inSensitive.sensitive.data.buffer
            inSensitive.sensitive.data.size = try key.withUnsafeBytes { bytes in Result { () throws(TPMError) in try fillTuple(&data, with: bytes, what: "key") } }.get()
            inSensitive.sensitive.data.buffer = data
            wipe(&data)
            if policy.passcode, let passcode {
                inSensitive.sensitive.userAuth = try authValue(gated(passcode))
            }

            var inPublic = TPM2B_PUBLIC()
            inPublic.publicArea.type = ts_ALG_KEYEDHASH
            inPublic.publicArea.nameAlg = ts_ALG_SHA256
            inPublic.publicArea.objectAttributes = ts_OBJ_FIXEDTPM | ts_OBJ_FIXEDPARENT
            inPublic.publicArea.authPolicy = try TPM2B_DIGEST(bytes: authPolicy.bytes)
            inPublic.publicArea.parameters.keyedHashDetail.scheme.scheme = ts_ALG_NULL

            let created = try create(&inSensitive, &inPublic, under: srk.handle, ctx)
            return SealedBlob(policy: policy, srkName: srk.name, nvName: nvName, passcodeNVName: passcodeNVName, pcr7Value: pcr7,
                              publicArea: created.publicArea, privateArea: created.privateArea,
                              check: SealedBlob.checkValue(of: key))
        }
    }

    /// What an object made for `policy` is bound to now: the SRK, the names
    /// of the NV indices the policy names (checked against `expectedNames`:
    /// an index whose name differs was replaced by someone else, and nothing
    /// is made for it), PCR 7 when bound, and the authPolicy for `use`.
    func bind(_ policy: SealPolicy, expectedNames: [UInt32: [UInt8]], use: KeyUse, _ ctx: OpaquePointer) throws(TPMError)
        -> (srk: (handle: ESYS_TR, name: [UInt8]), nvName: [UInt8], passcodeNVName: [UInt8], pcr7: [UInt8], authPolicy: PolicyDigest) {
        let srk = try storageRootKey(ctx)
        var nvName: [UInt8] = []
        var passcodeNVName: [UInt8] = []
        var pcr7: [UInt8] = []
        func checkedName(_ handle: UInt32) throws(TPMError) -> [UInt8] {
            let current = try name(of: nvHandle(handle, ctx), ctx)
            if let expected = expectedNames[handle], expected != current { throw TPMError.nvIndexReplaced(handle: handle) }
            return current
        }
        if let bio = policy.biometric {
            guard bio.counterAtMost != nil || bio.domainState.count == Self.enrollmentStateSize else {
                throw TPMError.invalidArgument("a domain state is \(Self.enrollmentStateSize) bytes")
            }
            nvName = try checkedName(bio.nvIndex)
            if bio.bindPCR7 { pcr7 = try readPCR7(ctx) }
        }
        if let counter = policy.passcodeCounter { passcodeNVName = try checkedName(counter.nvIndex) }
        let authPolicy = Self.authPolicy(policy, nvName: nvName, pcr7: pcr7, passcodeNVName: passcodeNVName, use: use)
        return (srk, nvName, passcodeNVName, pcr7, authPolicy)
    }

    /// TPM2_Create under `parent` (the SRK, whose auth is empty) through a
    /// salted session that encrypts inSensitive, so the key and the
    /// authValue cross the bus encrypted; the new object's marshalled
    /// TPM2B_PUBLIC and TPM2B_PRIVATE.
    func create(_ inSensitive: inout TPM2B_SENSITIVE_CREATE, _ inPublic: inout TPM2B_PUBLIC, under parent: ESYS_TR,
                _ ctx: OpaquePointer) throws(TPMError) -> (publicArea: [UInt8], privateArea: [UInt8]) {
        var outsideInfo = TPM2B_DATA()
        var creationPCR = TPML_PCR_SELECTION()
        var outPrivate: UnsafeMutablePointer<TPM2B_PRIVATE>?
        var outPublic: UnsafeMutablePointer<TPM2B_PUBLIC>?
        var creationData: UnsafeMutablePointer<TPM2B_CREATION_DATA>?
        var creationHash: UnsafeMutablePointer<TPM2B_DIGEST>?
        var ticket: UnsafeMutablePointer<TPMT_TK_CREATION>?
        let session = try startSession(ts_SE_HMAC, salted: true, attributes: ts_SESSION_DECRYPT, ctx)
        let rc = Esys_Create(ctx, parent, session, ESYS_TR_NONE, ESYS_TR_NONE, &inSensitive, &inPublic,
                             &outsideInfo, &creationPCR, &outPrivate, &outPublic, &creationData, &creationHash, &ticket)
        defer { Esys_Free(outPrivate); Esys_Free(outPublic); Esys_Free(creationData); Esys_Free(creationHash); Esys_Free(ticket) }
        if rc != ts_RC_SUCCESS {
            flush(session, ctx)
            try check(rc, .generic, ctx)
        }
        guard let outPrivate, let outPublic else {
            throw TPMError.other(code: 0, text: "TPM2_Create returned no object")
        }
        return (try marshal(outPublic, Tss2_MU_TPM2B_PUBLIC_Marshal), try marshal(outPrivate, Tss2_MU_TPM2B_PRIVATE_Marshal))
    }
}
