import CTSSCryptoContext
import Foundation
import Testing
import TestScopes
import TestRigs
import TouchstoneSecure
@testable import TouchstoneTPM

/// The shared OpenSSL library context for libtss2-esys (CTSSCryptoContext).
@Suite("Shared crypto context for tpm2-tss", .offPool)
struct CryptoContextTests {
    @Test("ESYS's hashing on a salted unseal goes through the shared context, and the bytes are right")
    func esysUsesTheSharedContext() throws {
        let rig = try SwtpmRig()
        let tpm = try rig.tpm()
        let key = SecureBytes.random(count: 32)
        let blob = try tpm.seal(key, policy: .deviceBound)
        let before = ts_tss_shared_crypto_context_uses()
        for _ in 0..<3 {
            #expect(try tpm.unseal(blob, via: .device) == key)
        }
        // Each unseal with a salted session computes several hashes and
        // HMACs; each asked for a library context and got the shared one.
        #expect(ts_tss_shared_crypto_context_uses() - before >= 3)
    }

    @Test("any other caller gets OpenSSL's own fresh context each time (the shared one would come back twice)")
    func otherCallersAreUntouched() throws {
        let first = try #require(OSSL_LIB_CTX_new())
        let second = try #require(OSSL_LIB_CTX_new())
        #expect(first != second)
        OSSL_LIB_CTX_free(first)
        OSSL_LIB_CTX_free(second)
    }

    @Test("binding libtss2-esys's two GOT slots (what the dlopen'ed security-key provider does) finds both, and salted unseals still go through the shared context with the right bytes, as do other callers' fresh contexts")
    func bindingTheSlots() throws {
        let rig = try SwtpmRig()
        let tpm = try rig.tpm()
        #expect(ts_tss_bind_shared_crypto_context() == 2, "OSSL_LIB_CTX_new and OSSL_LIB_CTX_free in libtss2-esys")
        #expect(ts_tss_bind_shared_crypto_context() == 2, "again: already bound, nothing changes")
        let key = SecureBytes.random(count: 32)
        let blob = try tpm.seal(key, policy: .deviceBound)
        let before = ts_tss_shared_crypto_context_uses()
        #expect(try tpm.unseal(blob, via: .device) == key)
        #expect(ts_tss_shared_crypto_context_uses() > before)
        let first = try #require(OSSL_LIB_CTX_new())
        let second = try #require(OSSL_LIB_CTX_new())
        #expect(first != second)
        OSSL_LIB_CTX_free(first)
        OSSL_LIB_CTX_free(second)
    }
}
