internal import CTSS2

/// What a TPM object is for: the one command its device-bound form allows.
package enum KeyUse: Sendable {
    /// A sealed key (KEYEDHASH): TPM2_Unseal.
    case unseal
    /// A signing key (ECC P-256): TPM2_Sign.
    case sign

    var commandCode: TPM2_CC { self == .unseal ? ts_CC_Unseal : ts_CC_Sign }
}

/// The policies of sealed objects: the digest each branch adds up to, and
/// the PolicyOR that joins them in a session.
extension TPM {
    /// The object's authPolicy for `policy`. `nvName`: the name of the
    /// biometric condition's index; `passcodeNVName`: that of the passcode
    /// counter (scheme 2). `command`: the one command the device-bound
    /// form allows (`use`).
    package static func authPolicy(_ policy: SealPolicy, nvName: [UInt8], pcr7: [UInt8],
                                   passcodeNVName: [UInt8] = [], use: KeyUse = .unseal) -> PolicyDigest {
        var branches: [PolicyDigest] = []
        let gate = policy.gateName
        if let bio = policy.biometric { branches.append(biometricBranch(bio, nvName: nvName, pcr7: pcr7, gate: gate)) }
        if policy.passcode { branches.append(passcodeBranch(policy.passcodeCounter, nvName: passcodeNVName, gate: gate)) }
        switch branches.count {
        case 0:
            var d = PolicyDigest()
            if let gate { d.policySecret(authName: gate) }
            d.policyCommandCode(use.commandCode)
            return d
        case 1: return branches[0]
        default: return PolicyDigest.or(branches)
        }
    }

    /// The object's authPolicy for the policy `blob` records.
    static func authPolicy(of blob: SealedBlob, use: KeyUse = .unseal) -> PolicyDigest {
        authPolicy(blob.policy, nvName: blob.nvName, pcr7: blob.pcr7Value, passcodeNVName: blob.passcodeNVName, use: use)
    }

    static func biometricBranch(_ bio: BiometricCondition, nvName: [UInt8], pcr7: [UInt8], gate: [UInt8]? = nil) -> PolicyDigest {
        var d = PolicyDigest()
        if let gate { d.policySecret(authName: gate) }
        if bio.bindPCR7 { d.policyPCR(pcrs: [7], values: [pcr7]) }
        let nv = bio.policyNV
        d.policyNV(operandB: nv.operand, operation: nv.operation, nvName: nvName)
        return d
    }

    /// PolicyAuthValue, then (scheme 2) PolicyNV(passcode counter <= m).
    static func passcodeBranch(_ counter: CounterCondition? = nil, nvName: [UInt8] = [], gate: [UInt8]? = nil) -> PolicyDigest {
        var d = PolicyDigest()
        if let gate { d.policySecret(authName: gate) }
        d.policyAuthValue()
        if let counter {
            d.policyNV(operandB: counterOperand(counter.atMost), operation: UInt16(ts_EO_UNSIGNED_LE), nvName: nvName)
        }
        return d
    }

    func policyOR(_ session: ESYS_TR, _ blob: SealedBlob, _ ctx: OpaquePointer) throws(TPMError) {
        var list = TPML_DIGEST()
        list.count = 2
        list.digests.0 = try TPM2B_DIGEST(bytes: Self.biometricBranch(blob.policy.biometric!, nvName: blob.nvName,
                                                                     pcr7: blob.pcr7Value, gate: blob.policy.gateName).bytes)
        list.digests.1 = try TPM2B_DIGEST(bytes: Self.passcodeBranch(blob.policy.passcodeCounter,
                                                                    nvName: blob.passcodeNVName, gate: blob.policy.gateName).bytes)
        try check(Esys_PolicyOR(ctx, session, ESYS_TR_NONE, ESYS_TR_NONE, ESYS_TR_NONE, &list), .policyOR, ctx)
    }
}
