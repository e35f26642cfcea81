internal import CTSS2
import TouchstoneSecure

/// A signing key made in the TPM: its blob (the policy it was made for, its
/// public and private areas) and its public point.
package struct SigningKey: Sendable, Equatable {
    package var blob: SealedBlob
    /// The uncompressed P-256 point: 0x04, X, Y (65 bytes).
    package var publicPoint: [UInt8]
}

extension TPM {
    /// Makes a non-exportable ECC P-256 signing key under the SRK:
    /// FIXEDTPM | FIXEDPARENT | SENSITIVEDATAORIGIN | SIGN, USERWITHAUTH
    /// clear (a policy session is always needed), scheme ECDSA/SHA-256,
    /// authPolicy the one `policy` gives (PolicyCommandCode(Sign) for the
    /// device-bound form). The private part is generated in the TPM and
    /// leaves it only wrapped under the SRK (fixedTPM: no duplication).
    ///
    /// `authValue`: the object's authValue, required when the policy has
    /// the PolicyAuthValue branch (`passcode`); peppered with the gate's
    /// secret in daemon mode, as sealed keys are. `expectedNames`: as for
    /// `seal`.
    package func createSigningKey(policy requested: SealPolicy, authValue: PasscodeAuth? = nil,
                                  expectedNames: [UInt32: [UInt8]] = [:]) throws(TPMError) -> SigningKey {
        var policy = requested
        policy.gateName = installedGate?.name
        if policy.passcode && authValue == nil {
            throw TPMError.invalidArgument("the PolicyAuthValue branch needs the authValue at creation")
        }
        return try withContext { ctx throws(TPMError) in
            let bound = try bind(policy, expectedNames: expectedNames, use: .sign, ctx)

            var inSensitive = TPM2B_SENSITIVE_CREATE()
            defer { wipe(&inSensitive) }
            if policy.passcode, let authValue {
                inSensitive.sensitive.userAuth = try self.authValue(gated(authValue))
            }

            var inPublic = TPM2B_PUBLIC()
            inPublic.publicArea.type = ts_ALG_ECC
            inPublic.publicArea.nameAlg = ts_ALG_SHA256
            inPublic.publicArea.objectAttributes = ts_OBJ_FIXEDTPM | ts_OBJ_FIXEDPARENT | ts_OBJ_SENSITIVEDATAORIGIN | ts_OBJ_SIGN
            inPublic.publicArea.authPolicy = try TPM2B_DIGEST(bytes: bound.authPolicy.bytes)
            inPublic.publicArea.parameters.eccDetail.symmetric.algorithm = ts_ALG_NULL
            inPublic.publicArea.parameters.eccDetail.scheme.scheme = ts_ALG_ECDSA
            inPublic.publicArea.parameters.eccDetail.scheme.details.ecdsa.hashAlg = ts_ALG_SHA256
            inPublic.publicArea.parameters.eccDetail.curveID = ts_ECC_NIST_P256
            inPublic.publicArea.parameters.eccDetail.kdf.scheme = ts_ALG_NULL

            let created = try create(&inSensitive, &inPublic, under: bound.srk.handle, ctx)
            let blob = SealedBlob(policy: policy, srkName: bound.srk.name, nvName: bound.nvName,
                                  passcodeNVName: bound.passcodeNVName, pcr7Value: bound.pcr7,
                                  publicArea: created.publicArea, privateArea: created.privateArea,
                                  check: [UInt8](repeating: 0, count: SealedBlob.checkSize))
            return SigningKey(blob: blob, publicPoint: try Self.publicPoint(of: blob))
        }
    }

    /// The public point of a signing key's blob (0x04, X, Y), read from its
    /// public area; corruptedBlob when it is not a P-256 signing key.
    package static func publicPoint(of blob: SealedBlob) throws(TPMError) -> [UInt8] {
        var inPublic = TPM2B_PUBLIC()
        let parsed: Bool = blob.publicArea.withUnsafeBufferPointer { bytes in
            var offset = 0
            return Tss2_MU_TPM2B_PUBLIC_Unmarshal(bytes.baseAddress, bytes.count, &offset, &inPublic) == ts_RC_SUCCESS
                && offset == bytes.count
        }
        let area = inPublic.publicArea
        guard parsed, area.type == ts_ALG_ECC, area.parameters.eccDetail.curveID == ts_ECC_NIST_P256,
              area.objectAttributes & ts_OBJ_SIGN != 0, area.objectAttributes & ts_OBJ_USERWITHAUTH == 0 else {
            throw TPMError.corruptedBlob(detail: "it is not a P-256 signing key")
        }
        let x = tupleBytes(area.unique.ecc.x.buffer, size: area.unique.ecc.x.size)
        let y = tupleBytes(area.unique.ecc.y.buffer, size: area.unique.ecc.y.size)
        guard x.count <= 32, y.count <= 32 else { throw TPMError.corruptedBlob(detail: "its public point is too long") }
        return [0x04] + [UInt8](repeating: 0, count: 32 - x.count) + x + [UInt8](repeating: 0, count: 32 - y.count) + y
    }

    /// TPM2_Sign of `digest` (SHA-256, 32 bytes) with the signing key
    /// `blob`, in a policy session satisfied through `branch`: ECDSA with
    /// SHA-256, a NULL hashcheck ticket (the key is not restricted). Returns
    /// r and s, 32 bytes each, big-endian.
    ///
    /// Commands with the SRK and NV handles known: biometric 6 (Start-
    /// AuthSession, [PolicySecret], PolicyNV, [PolicyOR], Load, Sign,
    /// FlushContext), PolicyAuthValue 6, device-bound 5.
    package func sign(digest: [UInt8], with blob: SealedBlob, via branch: UnsealBranch) throws(TPMError) -> (r: [UInt8], s: [UInt8]) {
        guard digest.count == 32 else { throw TPMError.invalidArgument("a SHA-256 digest is 32 bytes, not \(digest.count)") }
        let command = AuthorizedCommand<(r: [UInt8], s: [UInt8])>(use: .sign, encryptsResponse: false) { [self] key, auth, encrypt, op, ctx throws(TPMError) in
            var message = try TPM2B_DIGEST(bytes: digest)
            var scheme = TPMT_SIG_SCHEME()
            scheme.scheme = ts_ALG_ECDSA
            scheme.details.ecdsa.hashAlg = ts_ALG_SHA256
            var validation = TPMT_TK_HASHCHECK()
            validation.tag = ts_ST_HASHCHECK
            validation.hierarchy = ts_RH_NULL
            var signature: UnsafeMutablePointer<TPMT_SIGNATURE>?
            let rc = ResponseCode(Esys_Sign(ctx, key, auth, encrypt, ESYS_TR_NONE, &message, &scheme, &validation, &signature))
            defer { Esys_Free(signature) }
            try checkAuthorized(rc, op, ctx)
            guard let signature, signature.pointee.sigAlg == ts_ALG_ECDSA else {
                throw TPMError.other(code: 0, text: "TPM2_Sign returned no ECDSA signature")
            }
            let ecdsa = signature.pointee.signature.ecdsa
            let r = tupleBytes(ecdsa.signatureR.buffer, size: ecdsa.signatureR.size)
            let s = tupleBytes(ecdsa.signatureS.buffer, size: ecdsa.signatureS.size)
            guard r.count <= 32, s.count <= 32 else { throw TPMError.other(code: 0, text: "TPM2_Sign returned an oversized signature") }
            return ([UInt8](repeating: 0, count: 32 - r.count) + r, [UInt8](repeating: 0, count: 32 - s.count) + s)
        }
        return try authorize(blob, via: branch, command: command)
    }
}
