#define _GNU_SOURCE
#include "CTSSCryptoContext.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
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

/* The bodies, by addresses of this file's own: in a shared library,
 * OSSL_LIB_CTX_new's own address as this file sees it is whatever the
 * global scope resolves (libcrypto's), not these. */
static OSSL_LIB_CTX *shared_new_from(void *caller);
static void shared_free(OSSL_LIB_CTX *context);

OSSL_LIB_CTX *OSSL_LIB_CTX_new(void) { return shared_new_from(__builtin_return_address(0)); }
void OSSL_LIB_CTX_free(OSSL_LIB_CTX *context) { shared_free(context); }
/* What a bound slot calls. */
__attribute__((noinline)) static OSSL_LIB_CTX *shared_new(void) { return shared_new_from(__builtin_return_address(0)); }

/* `caller`: the code that called OSSL_LIB_CTX_new. */
static OSSL_LIB_CTX *shared_new_from(void *caller) {
    pthread_once(&resolved, resolve);
    if (openssl_new == NULL) return NULL; /* no libcrypto: as OpenSSL would fail */
    if (!in_esys(caller)) return openssl_new();
    pthread_once(&made, make_shared);
    OSSL_LIB_CTX *shared = __atomic_load_n(&shared_context, __ATOMIC_ACQUIRE);
    if (shared == NULL) return openssl_new();
    atomic_fetch_add(&shared_uses, 1);
    return shared;
}

static void shared_free(OSSL_LIB_CTX *context) {
    pthread_once(&resolved, resolve);
    if (context == NULL || openssl_free == NULL) return;
    if (context == __atomic_load_n(&shared_context, __ATOMIC_ACQUIRE)) return; /* kept for the next ESYS call */
    openssl_free(context);
}

unsigned long ts_tss_shared_crypto_context_uses(void) {
    return atomic_load(&shared_uses);
}

/* ---- Binding libtss2-esys's slots, for a dlopen'ed library ---- */

struct binding {
    int bound;
};

/* The address a dynamic-section pointer names: glibc has already added
 * the load base to most of them; a value below the base has not. */
static uintptr_t dynamic_address(uintptr_t base, ElfW(Addr) value) {
    return value < base ? base + value : value;
}

/* Points `slot` at `ours`, remembering OpenSSL's function in `original`. */
static int bind_slot(void **slot, void *ours, void **original, uintptr_t relro_start, uintptr_t relro_end) {
    void *current = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (current == ours) return 1;
    if (*original == NULL) *original = current;
    uintptr_t address = (uintptr_t)slot;
    int in_relro = address >= relro_start && address < relro_end;
    long page_size = sysconf(_SC_PAGESIZE);
    if (page_size <= 0) return 0;
    void *page = (void *)(address & ~((uintptr_t)page_size - 1));
    if (in_relro && mprotect(page, (size_t)page_size, PROT_READ | PROT_WRITE) != 0) return 0;
    __atomic_store_n(slot, ours, __ATOMIC_RELEASE);
    if (in_relro) mprotect(page, (size_t)page_size, PROT_READ);
    return 1;
}

static int bind_esys(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct binding *binding = data;
    const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    name = name ? name + 1 : info->dlpi_name;
    if (name == NULL || strncmp(name, "libtss2-esys.so", strlen("libtss2-esys.so")) != 0) return 0;
    uintptr_t base = info->dlpi_addr;
    const ElfW(Dyn) *dynamic = NULL;
    uintptr_t relro_start = 0, relro_end = 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[i];
        if (header->p_type == PT_DYNAMIC) dynamic = (const ElfW(Dyn) *)(base + header->p_vaddr);
        if (header->p_type == PT_GNU_RELRO) {
            relro_start = base + header->p_vaddr;
            relro_end = relro_start + header->p_memsz;
        }
    }
    if (dynamic == NULL) return 1;
    const ElfW(Sym) *symbols = NULL;
    const char *strings = NULL;
    const ElfW(Rela) *tables[2] = {NULL, NULL};
    size_t sizes[2] = {0, 0};
    for (const ElfW(Dyn) *entry = dynamic; entry->d_tag != DT_NULL; entry++) {
        switch (entry->d_tag) {
        case DT_SYMTAB: symbols = (const ElfW(Sym) *)dynamic_address(base, entry->d_un.d_ptr); break;
        case DT_STRTAB: strings = (const char *)dynamic_address(base, entry->d_un.d_ptr); break;
        case DT_JMPREL: tables[0] = (const ElfW(Rela) *)dynamic_address(base, entry->d_un.d_ptr); break;
        case DT_PLTRELSZ: sizes[0] = entry->d_un.d_val; break;
        case DT_RELA: tables[1] = (const ElfW(Rela) *)dynamic_address(base, entry->d_un.d_ptr); break;
        case DT_RELASZ: sizes[1] = entry->d_un.d_val; break;
        default: break;
        }
    }
    if (symbols == NULL || strings == NULL) return 1;
    pthread_once(&resolved, resolve);
    for (int t = 0; t < 2; t++) {
        if (tables[t] == NULL) continue;
        for (size_t n = 0; n < sizes[t] / sizeof(ElfW(Rela)); n++) {
            const ElfW(Rela) *relocation = &tables[t][n];
            unsigned long type = ELF64_R_TYPE(relocation->r_info);
            if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) continue;
            const char *symbol = strings + symbols[ELF64_R_SYM(relocation->r_info)].st_name;
            void **slot = (void **)(base + relocation->r_offset);
            if (strcmp(symbol, "OSSL_LIB_CTX_new") == 0) {
                binding->bound += bind_slot(slot, (void *)shared_new, (void **)&openssl_new, relro_start, relro_end);
            } else if (strcmp(symbol, "OSSL_LIB_CTX_free") == 0) {
                binding->bound += bind_slot(slot, (void *)shared_free, (void **)&openssl_free, relro_start, relro_end);
            }
        }
    }
    return 1;
}

static pthread_mutex_t binding_lock = PTHREAD_MUTEX_INITIALIZER;

int ts_tss_bind_shared_crypto_context(void) {
#if defined(__x86_64__)
    pthread_mutex_lock(&binding_lock);
    struct binding binding = {0};
    dl_iterate_phdr(bind_esys, &binding);
    pthread_mutex_unlock(&binding_lock);
    return binding.bound;
#else
    return 0;
#endif
}
