#define _GNU_SOURCE
#include "CTSSCryptoContext.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

typedef struct ossl_lib_ctx_st OSSL_LIB_CTX;

static OSSL_LIB_CTX *(*openssl_new)(void);
static void (*openssl_free)(OSSL_LIB_CTX *);
static OSSL_LIB_CTX *shared_context;
static void *esys_base;
static pthread_once_t resolved = PTHREAD_ONCE_INIT;
static pthread_once_t made = PTHREAD_ONCE_INIT;
static atomic_ulong shared_uses;

static void resolve(void) {
    openssl_new = (OSSL_LIB_CTX *(*)(void))dlsym(RTLD_NEXT, "OSSL_LIB_CTX_new");
    openssl_free = (void (*)(OSSL_LIB_CTX *))dlsym(RTLD_NEXT, "OSSL_LIB_CTX_free");
}

static void make_shared(void) {
    __atomic_store_n(&shared_context, openssl_new(), __ATOMIC_RELEASE);
}

/* Whether `address` is code of libtss2-esys. */
static int in_esys(const void *address) {
    void *known = __atomic_load_n(&esys_base, __ATOMIC_ACQUIRE);
    Dl_info info;
    if (dladdr(address, &info) == 0 || info.dli_fname == NULL) return 0;
    if (known != NULL) return info.dli_fbase == known;
    const char *name = strrchr(info.dli_fname, '/');
    name = name ? name + 1 : info.dli_fname;
    if (strncmp(name, "libtss2-esys.so", strlen("libtss2-esys.so")) != 0) return 0;
    __atomic_store_n(&esys_base, info.dli_fbase, __ATOMIC_RELEASE);
    return 1;
}

OSSL_LIB_CTX *OSSL_LIB_CTX_new(void) {
    pthread_once(&resolved, resolve);
    if (openssl_new == NULL) return NULL; /* no libcrypto: as OpenSSL would fail */
    if (!in_esys(__builtin_return_address(0))) return openssl_new();
    pthread_once(&made, make_shared);
    OSSL_LIB_CTX *shared = __atomic_load_n(&shared_context, __ATOMIC_ACQUIRE);
    if (shared == NULL) return openssl_new();
    atomic_fetch_add(&shared_uses, 1);
    return shared;
}

void OSSL_LIB_CTX_free(OSSL_LIB_CTX *context) {
    pthread_once(&resolved, resolve);
    if (context == NULL || openssl_free == NULL) return;
    if (context == __atomic_load_n(&shared_context, __ATOMIC_ACQUIRE)) return; /* kept for the next ESYS call */
    openssl_free(context);
}

unsigned long ts_tss_shared_crypto_context_uses(void) {
    return atomic_load(&shared_uses);
}
