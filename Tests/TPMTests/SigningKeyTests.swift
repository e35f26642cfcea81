import COpenSSL
import Testing
import TestScopes
import TouchstoneSecure
@testable import TouchstoneTPM
import TestRigs
import CTSS2

/// ECDSA P-256 verification with OpenSSL: the TPM's signature checked by
/// another implementation, against the public point the blob gives.
private func verifies(_ r: [UInt8], _ s: [UInt8], digest: [UInt8], point: [UInt8]) -> Bool {
    func name(_ text: StaticString) -> UnsafePointer<CChar> { UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self) }
    // EVP_PKEY_PUBLIC_KEY, a macro that does not import: OSSL_KEYMGMT_SELECT_ALL_PARAMETERS (0x84) | _PUBLIC_KEY (0x02).
    let publicKeySelection: Int32 = 0x86
    let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil)
    defer { EVP_PKEY_CTX_free(context) }
    var pointCopy = point
    var key: OpaquePointer?
    let made = pointCopy.withUnsafeMutableBytes { bytes -> Bool in
        var parameters = [OSSL_PARAM_construct_utf8_string(name("group"), UnsafeMutablePointer(mutating: name("P-256")), 0),
                          OSSL_PARAM_construct_octet_string(name("pub"), bytes.baseAddress, bytes.count),
                          OSSL_PARAM_construct_end()]
        return EVP_PKEY_fromdata_init(context) == 1 && EVP_PKEY_fromdata(context, &key, publicKeySelection, &parameters) == 1
    }
    guard made, let key else { return false }
    defer { EVP_PKEY_free(key) }
    guard let signature = ECDSA_SIG_new() else { return false }
    defer { ECDSA_SIG_free(signature) }
    ECDSA_SIG_set0(signature, BN_bin2bn(r, 32, nil), BN_bin2bn(s, 32, nil))
    var der: UnsafeMutablePointer<UInt8>?
    let length = i2d_ECDSA_SIG(signature, &der)
    guard length > 0, let der else { return false }
    defer { CRYPTO_free(der, #file, #line) }
    let verify = EVP_PKEY_CTX_new(key, nil)
    defer { EVP_PKEY_CTX_free(verify) }
    return EVP_PKEY_verify_init(verify) == 1 && EVP_PKEY_verify(verify, der, Int(length), digest, digest.count) == 1
}

/// TPM2_Sign with keys made by `createSigningKey` (TPM+SigningKey.swift),
/// each branch through the same flows as an unseal (`authorize`).
@Suite("ssh signing keys in the TPM: made there, used only through their policy", .offPool)
struct SigningKeyTests {
    private static func digest(_ text: String) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        let bytes = Array(text.utf8)
        var size: UInt32 = 32
        EVP_Digest(bytes, bytes.count, &out, &size, EVP_sha256(), nil)
        return out
    }

    @Test("each policy's key signs through its branch, OpenSSL verifies it, and no other branch or authValue signs")
    func branchesSignAndOthersDoNot() throws {
        try withSwtpm { rig, tpm in
            let counter = try tpm.freeCounterIndex()
            let generation = try tpm.defineCounter(counter, auth: rightPasscode).value
            let authValue = PasscodeAuth(authValue: SecureBytes.random(count: 32))
            let other = PasscodeAuth(authValue: SecureBytes.random(count: 32))
            let bio = BiometricCondition(counter: counter, atMost: generation)
            let cases: [(String, SealPolicy, PasscodeAuth?, UnsealBranch, [UnsealBranch])] = [
                ("device-bound", .deviceBound, nil, .device, [.biometric, .passcode(authValue)]),
                ("current set", .biometricOnly(bio), nil, .biometric, [.device, .passcode(authValue)]),
                ("authValue", SealPolicy(biometric: nil, passcode: true), authValue, .passcode(authValue), [.device, .biometric, .passcode(other)]),
                ("both", SealPolicy(biometric: bio, passcode: true), authValue, .passcode(authValue), [.device, .passcode(other)]),
            ]
            for (what, policy, auth, branch, refused) in cases {
                let key = try tpm.createSigningKey(policy: policy, authValue: auth)
                #expect(key.publicPoint.count == 65 && key.publicPoint[0] == 4, "\(what)")
                let stored = try SealedBlob(serialized: key.blob.serialized())
                #expect(try TPM.publicPoint(of: stored) == key.publicPoint, "\(what)")
                // The object: a signing key, no userWithAuth, made and kept in the TPM, its policy the recorded one.
                var inPublic = TPM2B_PUBLIC()
                try tpm.unmarshal(stored.publicArea, into: &inPublic, Tss2_MU_TPM2B_PUBLIC_Unmarshal)
                let attributes = inPublic.publicArea.objectAttributes
                #expect(attributes & ts_OBJ_USERWITHAUTH == 0, "\(what)")
                #expect(attributes & (ts_OBJ_FIXEDTPM | ts_OBJ_FIXEDPARENT | ts_OBJ_SENSITIVEDATAORIGIN | ts_OBJ_SIGN)
                        == (ts_OBJ_FIXEDTPM | ts_OBJ_FIXEDPARENT | ts_OBJ_SENSITIVEDATAORIGIN | ts_OBJ_SIGN), "\(what)")
                let objectPolicy = tupleBytes(inPublic.publicArea.authPolicy.buffer, size: inPublic.publicArea.authPolicy.size)
                #expect(objectPolicy == TPM.authPolicy(of: stored, use: .sign).bytes, "\(what)")

                let digest = Self.digest("sign me: \(what)")
                let (r, s) = try tpm.sign(digest: digest, with: stored, via: branch)
                #expect(verifies(r, s, digest: digest, point: key.publicPoint), "\(what): OpenSSL verifies the TPM's signature")
                #expect(!verifies(r, s, digest: Self.digest("something else"), point: key.publicPoint), "\(what): not another digest's")
                for wrong in refused {
                    #expect(throws: TPMError.self, "\(what): \(wrong)") { try tpm.sign(digest: digest, with: stored, via: wrong) }
                }
                // A sealed key's unseal flow on a signing key: the TPM refuses (Unseal needs a KEYEDHASH object).
                #expect(throws: TPMError.self, "\(what): unseal") { try tpm.unseal(stored, via: branch) }
            }
        }
    }

    @Test("a current-set key stops signing for good once the enrolment counter moves on; the authValue branch of a key with both goes on")
    func counterIncrementClosesTheBiometricBranch() throws {
        try withSwtpm { rig, tpm in
            let counter = try tpm.freeCounterIndex()
            let generation = try tpm.defineCounter(counter, auth: rightPasscode).value
            let authValue = PasscodeAuth(authValue: SecureBytes.random(count: 32))
            let bio = BiometricCondition(counter: counter, atMost: generation)
            let currentSet = try tpm.createSigningKey(policy: .biometricOnly(bio))
            let both = try tpm.createSigningKey(policy: SealPolicy(biometric: bio, passcode: true), authValue: authValue)
            let digest = Self.digest("before")
            _ = try tpm.sign(digest: digest, with: currentSet.blob, via: .biometric)
            _ = try tpm.sign(digest: digest, with: both.blob, via: .biometric)
            try tpm.incrementCounter(counter, auth: rightPasscode)
            #expect(throws: TPMError.self) { try tpm.sign(digest: digest, with: currentSet.blob, via: .biometric) }
            #expect(throws: TPMError.self) { try tpm.sign(digest: digest, with: both.blob, via: .biometric) }
            let (r, s) = try tpm.sign(digest: digest, with: both.blob, via: .passcode(authValue))
            #expect(verifies(r, s, digest: digest, point: both.publicPoint))
        }
    }

    @Test("a signing key's blob signs on no other TPM: refused as another TPM's before any command")
    func otherTPM() throws {
        try withSwtpm { _, tpm in
            let key = try tpm.createSigningKey(policy: .deviceBound)
            _ = try tpm.sign(digest: Self.digest("here"), with: key.blob, via: .device)
            try withSwtpm { _, other in
                #expect(throws: TPMError.foreignBlob) { try other.sign(digest: Self.digest("there"), with: key.blob, via: .device) }
            }
        }
    }
}
