#ifndef TOUCHSTONE_COPENSSL_SHIM_H
#define TOUCHSTONE_COPENSSL_SHIM_H
// OpenSSL's libcrypto (3.x): DH, HKDF and AES for the Secret Service's
// encrypted sessions.
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#endif
