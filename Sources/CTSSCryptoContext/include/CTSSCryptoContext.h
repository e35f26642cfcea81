#ifndef CTSS_CRYPTO_CONTEXT_H
#define CTSS_CRYPTO_CONTEXT_H

/*
 * One OpenSSL library context for tpm2-tss's client-side crypto
 * (docs/tpm.md, "Client-side crypto").
 *
 * libtss2-esys 3.2 creates and frees a new OSSL_LIB_CTX for every hash,
 * HMAC and key derivation it computes. A new library context re-reads
 * OpenSSL's algorithm names and starts its providers, so an unseal spent
 * 10-15 ms of CPU there. This file defines OSSL_LIB_CTX_new and
 * OSSL_LIB_CTX_free; when the program exports them (the touchstone and
 * TouchstoneBench executables are linked with
 * --export-dynamic-symbol=OSSL_LIB_CTX_new/free), libtss2-esys's calls reach
 * them first:
 *
 * - a call from inside libtss2-esys gets one private context, made once by
 *   OpenSSL's own OSSL_LIB_CTX_new and kept for the life of the process;
 *   its OSSL_LIB_CTX_free of that context does nothing. It is still not the
 *   default context, which is what tpm2-tss wants (a TPM provider loaded
 *   in the default context must not serve ESYS's own hashing);
 * - every other caller gets OpenSSL's functions unchanged.
 *
 * A context holds algorithm tables, not keys: keys and digests live in the
 * EVP objects that ESYS frees after each operation.
 */

/* The two functions (OpenSSL's prototypes). */
struct ossl_lib_ctx_st;
struct ossl_lib_ctx_st *OSSL_LIB_CTX_new(void);
void OSSL_LIB_CTX_free(struct ossl_lib_ctx_st *context);

/* How many times libtss2-esys was handed the shared context (0: the
 * program does not export the functions above, and ESYS makes its own). */
unsigned long ts_tss_shared_crypto_context_uses(void);

/*
 * For a library that a program loads with dlopen (the security-key
 * provider in ssh-sk-helper), where exporting cannot work: the program's
 * own libcrypto is in the global scope, so libtss2-esys's calls resolve
 * to OpenSSL's functions whatever this library defines. This points
 * libtss2-esys's two relocation slots (its GOT entries for
 * OSSL_LIB_CTX_new and OSSL_LIB_CTX_free) at the functions above, once;
 * the slots' earlier values, OpenSSL's functions, are what they call for
 * everyone else. Slots in the RELRO segment are made writable for the
 * write and read-only again. Returns how many slots now point here (0:
 * libtss2-esys is not loaded, or its slots could not be found; ESYS then
 * works as before, only slower). In a program that exports the
 * functions it changes nothing: the slots point here already.
 */
int ts_tss_bind_shared_crypto_context(void);

#endif
