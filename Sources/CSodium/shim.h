#ifndef TOUCHSTONE_CSODIUM_SHIM_H
#define TOUCHSTONE_CSODIUM_SHIM_H
#include <stddef.h>
#include <sodium.h>

// Zeroes `size` bytes of the calling thread's stack just below the caller's
// frame: where the functions it called kept their locals and spilled
// registers. A shim because Swift cannot allocate a variable-length array
// on the stack (withUnsafeTemporaryAllocation puts anything over 1 KiB on
// the heap).
__attribute__((noinline, unused)) static void ts_scrub_stack(size_t size) {
    unsigned char buffer[size];
    sodium_memzero(buffer, size);
    __asm__ __volatile__("" : : "r"(buffer) : "memory");
}

#endif
