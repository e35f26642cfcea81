internal import CSodium
internal import CTSS2
import TouchstoneSecure

/// The command a policy session authorizes on a loaded object (TPM2_Unseal
/// for a sealed key, TPM2_Sign for a signing key): the branch flows of
/// `authorize` are the same for both, only the last command differs.
struct AuthorizedCommand<Output> {
    /// What the object is for: the device-bound form's PolicyCommandCode.
    var use: KeyUse
    /// Whether its response carries a secret, encrypted through a salted
    /// session (TPM2_Unseal's does; TPM2_Sign's first response parameter is
    /// not a sized buffer, which the TPM refuses to encrypt).
    var encryptsResponse: Bool
    /// Runs the command on `object`, authorized by the policy session
    /// `auth`; `encrypt` is the session that encrypts, or ESYS_TR_NONE; `op`
    /// names the branch for error mapping.
    var run: (_ object: ESYS_TR, _ auth: ESYS_TR, _ encrypt: ESYS_TR, _ op: TPMOperation,
              _ ctx: OpaquePointer) throws(TPMError) -> Output
}

extension TPM {
    /// Opens a sealed key through `branch`.
    ///
    /// Commands with the SRK and NV handles already known to this instance:
    /// biometric 7 (+1 with PCR 7): StartAuthSession x2, [PolicyPCR], PolicyNV,
    /// [PolicyOR], Load, Unseal, FlushContext; passcode 6: StartAuthSession,
    /// PolicyAuthValue, [PolicyOR], Load, Unseal, FlushContext.
    package func unseal(_ blob: SealedBlob, via branch: UnsealBranch) throws(TPMError) -> SecureBytes {
        try authorize(blob, via: branch, command: AuthorizedCommand(use: .unseal, encryptsResponse: true) { [self] item, auth, encrypt, op, ctx throws(TPMError) in
            try takeKey(try runUnseal(item, auth, encrypt, op, ctx), blob)
        })
    }

    /// Loads `blob`'s object and runs `command` on it in a policy session
    /// satisfied through `branch` (the gate's PolicySecret first, for an
    /// object made through the daemon's gate).
    func authorize<Output>(_ blob: SealedBlob, via branch: UnsealBranch,
                           command: AuthorizedCommand<Output>) throws(TPMError) -> Output {
        try withContext { ctx throws(TPMError) in
            let srk = try storageRootKey(ctx)
            guard blob.srkName == srk.name else { throw TPMError.foreignBlob }
            if let gateName = blob.policy.gateName, installedGate?.name != gateName {
                throw TPMError.branchNotAvailable("it is sealed through touchstoned's gate, which only the daemon holds")
            }
            switch branch {
            case .biometric:
                guard blob.policy.biometric != nil else { throw TPMError.branchNotAvailable("it has no biometric branch") }
            case .passcode:
                guard blob.policy.passcode else { throw TPMError.branchNotAvailable("it has no passcode branch") }
            case .device:
                guard blob.policy.biometric == nil && !blob.policy.passcode else {
                    throw TPMError.branchNotAvailable("it is not a device-bound key")
                }
            }

            let item = try load(blob, under: srk.handle, use: command.use, ctx)
            defer { flush(item, ctx) }

            var sessions: [ESYS_TR] = []
            do throws(TPMError) {
                let out: Output
                switch branch {
                case .biometric:
                    out = try authorizeBiometric(blob, item: item, command, sessions: &sessions, ctx)
                case .passcode(let passcode):
                    out = try authorizePasscode(blob, item: item, passcode: passcode, command, sessions: &sessions, ctx)
                case .device:
                    let session = try startSession(ts_SE_POLICY, salted: true,
                                                   attributes: command.encryptsResponse ? ts_SESSION_ENCRYPT : 0, ctx)
                    sessions.append(session)
                    try gate(blob, session, ctx)
                    try check(Esys_PolicyCommandCode(ctx, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, command.use.commandCode),
                              .generic, ctx)
                    out = try command.run(item, session, ESYS_TR_NONE, .unsealDevice, ctx)
                }
                sessions = []  // closed by the TPM with the successful command
                return out
            } catch {
                for s in sessions { flush(s, ctx) }
                throw error
            }
        }
    }

    private func authorizeBiometric<Output>(_ blob: SealedBlob, item: ESYS_TR, _ command: AuthorizedCommand<Output>,
                                            sessions: inout [ESYS_TR], _ ctx: OpaquePointer) throws(TPMError) -> Output {
        let bio = blob.policy.biometric!
        if bio.counterAtMost != nil {
            do throws(TPMError) {
                return try authorizeBiometricCondition(blob, bio, item: item, command, sessions: &sessions, ctx)
            } catch {
                if case .enrollmentChanged = error {
                    throw counterFailure(bio.nvIndex, recordedName: blob.nvName, otherwise: error, ctx)
                }
                if case .corruptedBlob = error {
                    throw counterFailure(bio.nvIndex, recordedName: blob.nvName, otherwise: error, ctx)
                }
                throw error
            }
        }
        return try authorizeBiometricCondition(blob, bio, item: item, command, sessions: &sessions, ctx)
    }

    private func authorizeBiometricCondition<Output>(_ blob: SealedBlob, _ bio: BiometricCondition, item: ESYS_TR,
                                                     _ command: AuthorizedCommand<Output>, sessions: inout [ESYS_TR],
                                                     _ ctx: OpaquePointer) throws(TPMError) -> Output {
        let nv: ESYS_TR
        do throws(TPMError) { nv = try nvHandle(bio.nvIndex, ctx) } catch TPMError.enrollmentIndexMissing { throw TPMError.enrollmentChanged }
        // The policy session proves the NV condition but does not encrypt:
        // with a non-empty authValue that is not in this branch's policy,
        // ESYS and the TPM would disagree on the encryption key and Unseal
        // would return wrong bytes. A separate salted HMAC session encrypts.
        let policy = try startSession(ts_SE_POLICY, salted: false, attributes: 0, ctx)
        sessions.append(policy)
        try gate(blob, policy, ctx)
        if bio.bindPCR7 {
            var empty = TPM2B_DIGEST()
            var selection = Self.pcr7Selection()
            try check(Esys_PolicyPCR(ctx, policy, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &empty, &selection), .policyPCR, ctx)
        }
        let condition = bio.policyNV
        var operand = try TPM2B_DIGEST(bytes: condition.operand)
        try check(Esys_PolicyNV(ctx, ESYS_TR_RH_OWNER, nv, policy, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                &operand, 0, TPM2_EO(condition.operation)), .policyNV, ctx)
        do throws(TPMError) {
            if blob.policy.passcode {
                try policyOR(policy, blob, ctx)
            }
            guard command.encryptsResponse else { return try command.run(item, policy, ESYS_TR_NONE, .unsealBiometric, ctx) }
            let encrypt = try startSession(ts_SE_HMAC, salted: true, attributes: ts_SESSION_ENCRYPT, ctx)
            sessions.append(encrypt)
            return try command.run(item, policy, encrypt, .unsealBiometric, ctx)
        } catch {
            // PolicyNV held, so the state matches: a mismatch now is the boot
            // state (PCR 7) or an index replaced since sealing.
            if case .other = error { throw error }
            if case .enrollmentChanged = error, bio.bindPCR7, (try? readPCR7(ctx)) != blob.pcr7Value {
                throw TPMError.bootStateChanged
            }
            if case .corruptedBlob = error, bio.bindPCR7, (try? readPCR7(ctx)) != blob.pcr7Value {
                throw TPMError.bootStateChanged
            }
            if case .corruptedBlob = error, (try? name(of: nv, ctx)) != blob.nvName {
                throw TPMError.enrollmentChanged
            }
            throw error
        }
    }

    /// Why a scheme-2 key's counter condition failed: the counter past the
    /// key's generation (`otherwise`), or no longer the index it was sealed
    /// to (`nvIndexReplaced`: its name, asked from the TPM afresh, is not
    /// the recorded one).
    private func counterFailure(_ handle: UInt32, recordedName: [UInt8], otherwise: TPMError,
                                _ ctx: OpaquePointer) -> TPMError {
        if let known = nvHandles.removeValue(forKey: handle) {
            var tr = known
            _ = Esys_TR_Close(ctx, &tr)
        }
        do throws(TPMError) {
            let current = try name(of: nvHandle(handle, ctx), ctx)
            return current == recordedName ? otherwise : .nvIndexReplaced(handle: handle)
        } catch TPMError.enrollmentIndexMissing {
            return otherwise  // deleted: the keys bound to it are closed, as by an increment
        } catch {
            return otherwise
        }
    }

    private func authorizePasscode<Output>(_ blob: SealedBlob, item: ESYS_TR, passcode: PasscodeAuth,
                                           _ command: AuthorizedCommand<Output>, sessions: inout [ESYS_TR],
                                           _ ctx: OpaquePointer) throws(TPMError) -> Output {
        // PolicyAuthValue: the TPM checks an HMAC keyed with the authValue;
        // the passcode itself never crosses the bus. The session is salted,
        // so the HMAC and the encrypted response reveal nothing to a sniffer.
        let session = try startSession(ts_SE_POLICY, salted: true,
                                       attributes: command.encryptsResponse ? ts_SESSION_ENCRYPT : 0, ctx)
        sessions.append(session)
        try gate(blob, session, ctx)
        try check(Esys_PolicyAuthValue(ctx, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE), .generic, ctx)
        if let counter = blob.policy.passcodeCounter {
            // Scheme 2: the passcode counter at most the key's generation;
            // after a passcode change it is past it, for every copy.
            let nv: ESYS_TR
            do throws(TPMError) { nv = try nvHandle(counter.nvIndex, ctx) } catch TPMError.enrollmentIndexMissing { throw TPMError.passcodeChanged }
            var operand = try TPM2B_DIGEST(bytes: counterOperand(counter.atMost))
            do throws(TPMError) {
                try check(Esys_PolicyNV(ctx, ESYS_TR_RH_OWNER, nv, session, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE,
                                        &operand, 0, ts_EO_UNSIGNED_LE), .policyNVPasscode, ctx)
            } catch TPMError.passcodeChanged {
                throw counterFailure(counter.nvIndex, recordedName: blob.passcodeNVName, otherwise: .passcodeChanged, ctx)
            }
        }
        if blob.policy.biometric != nil {
            try policyOR(session, blob, ctx)
        }
        try setAuth(item, blob.policy.gateName != nil ? gated(passcode) : passcode, ctx)
        defer { clearAuth(item, ctx) }
        do throws(TPMError) {
            return try command.run(item, session, ESYS_TR_NONE, .unsealPasscode, ctx)
        } catch {
            // PolicyNV held on the index ESYS knows; a policy failure now is
            // an index whose name is not the one sealed to.
            if let counter = blob.policy.passcodeCounter, case .corruptedBlob = error {
                throw counterFailure(counter.nvIndex, recordedName: blob.passcodeNVName, otherwise: error, ctx)
            }
            throw error
        }
    }

    /// PolicySecret(gate) first, for a key sealed through the daemon's gate.
    private func gate(_ blob: SealedBlob, _ session: ESYS_TR, _ ctx: OpaquePointer) throws(TPMError) {
        guard blob.policy.gateName != nil, let gate = installedGate else { return }
        try policySecret(gate, on: session, ctx)
    }

    private func runUnseal(_ item: ESYS_TR, _ auth: ESYS_TR, _ encrypt: ESYS_TR, _ op: TPMOperation,
                           _ ctx: OpaquePointer) throws(TPMError) -> UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>? {
        var out: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?
        let rc = ResponseCode(Esys_Unseal(ctx, item, auth, encrypt, ESYS_TR_NONE, &out))
        wipeResponseParameters(ctx)
        try checkAuthorized(rc, op, ctx)
        return out
    }

    /// The response code of an authorized command: a policy that no longer
    /// holds fails here for single-branch keys.
    func checkAuthorized(_ rc: ResponseCode, _ op: TPMOperation, _ ctx: OpaquePointer) throws(TPMError) {
        guard !rc.isSuccess else { return }
        if op == .unsealBiometric || op == .unsealPasscode, rc.isFromTPM, rc.base == ts_RC_POLICY_FAIL {
            throw TPMError.corruptedBlob(detail: "policy check failed")
        }
        try check(rc.raw, op, ctx)
    }

    /// Zeroes the response parameters of the last command where ESYS keeps
    /// them: in its SYS context's command buffer. ESYS decrypts an encrypted
    /// response parameter (the unsealed key) and writes the plaintext back
    /// there, and the buffer is reused by the next command (whose shorter
    /// response leaves the key's bytes behind) and freed by Esys_Finalize
    /// without being wiped: the root and class keys would stay in memory
    /// (docs/reliability.md, "Secrets in memory").
    private func wipeResponseParameters(_ ctx: OpaquePointer) {
        var sys: OpaquePointer?
        guard Esys_GetSysContext(ctx, &sys) == ts_RC_SUCCESS, let sys else { return }
        var size = 0
        var parameters: UnsafePointer<UInt8>?
        guard Tss2_Sys_GetRpBuffer(sys, &size, &parameters) == ts_RC_SUCCESS, let parameters, size > 0 else { return }
        sodium_memzero(UnsafeMutablePointer(mutating: parameters), size)
    }

    /// Copies the unsealed bytes into a SecureBytes, wipes ESYS's buffer,
    /// frees it, and checks the bytes against the blob's check value.
    private func takeKey(_ out: UnsafeMutablePointer<TPM2B_SENSITIVE_DATA>?, _ blob: SealedBlob) throws(TPMError) -> SecureBytes {
        guard let out else { throw TPMError.other(code: 0, text: "TPM2_Unseal returned nothing") }
        defer { wipe(&out.pointee); Esys_Free(out) }
        let size = min(Int(out.pointee.size), MemoryLayout.size(ofValue: out.pointee.buffer))
        let key = withUnsafeBytes(of: &out.pointee.buffer) { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0.prefix(size))) }
        guard SealedBlob.checkValue(of: key) == blob.check else {
            throw TPMError.corruptedBlob(detail: "the TPM returned bytes that do not match the sealed key")
        }
        return key
    }

    /// Loads the blob's object under the SRK (the caller flushes it). A
    /// public area whose policy is not the one recorded is refused first:
    /// the key could not be opened, and the error would be less clear later.
    /// `use`: what the object is for (the device-bound form's command).
    func load(_ blob: SealedBlob, under srk: ESYS_TR, use: KeyUse = .unseal, _ ctx: OpaquePointer) throws(TPMError) -> ESYS_TR {
        try loadObject(blob.publicArea, blob.privateArea, under: srk, unparsable: "its TPM structures do not parse",
                       policy: Self.authPolicy(of: blob, use: use), ctx)
    }

    /// Loads marshalled public and private areas under `parent` (the
    /// caller flushes the object); `policy`, when given, must be the
    /// object's authPolicy. `unparsable`: the corruptedBlob detail when the
    /// areas do not parse.
    func loadObject(_ publicArea: [UInt8], _ privateArea: [UInt8], under parent: ESYS_TR, unparsable: String,
                    policy: PolicyDigest? = nil, _ ctx: OpaquePointer) throws(TPMError) -> ESYS_TR {
        var inPublic = TPM2B_PUBLIC()
        var inPrivate = TPM2B_PRIVATE()
        do throws(TPMError) {
            try unmarshal(publicArea, into: &inPublic, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
            try unmarshal(privateArea, into: &inPrivate, Tss2_MU_TPM2B_PRIVATE_Unmarshal)
        } catch {
            throw TPMError.corruptedBlob(detail: unparsable)
        }
        if let policy, tupleBytes(inPublic.publicArea.authPolicy.buffer, size: inPublic.publicArea.authPolicy.size) != policy.bytes {
            throw TPMError.corruptedBlob(detail: "its policy is not the one recorded")
        }
        var object: ESYS_TR = ESYS_TR_NONE
        try check(Esys_Load(ctx, parent, ESYS_TR_PASSWORD, ESYS_TR_NONE, ESYS_TR_NONE, &inPrivate, &inPublic, &object), .load, ctx)
        return object
    }
}
