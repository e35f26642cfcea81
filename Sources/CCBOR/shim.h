#ifndef TOUCHSTONE_CCBOR_SHIM_H
#define TOUCHSTONE_CCBOR_SHIM_H
// libcbor (Debian's libcbor-dev, 0.8): CTAP2's messages are CBOR, parsed
// and serialized by it (Sources/TouchstoneFIDO/CBOR.swift).
#include <cbor.h>
#endif
