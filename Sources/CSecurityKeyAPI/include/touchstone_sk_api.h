/*
 * The security-key provider ABI of OpenSSH 9.2 (sk-api version 0x000a0000,
 * its PROTOCOL.u2f and sk-api.h): the structures ssh-sk-helper passes to
 * and frees from a provider library. Written here from that interface;
 * the functions themselves are Swift (@_cdecl, Sources/TouchstoneSK).
 */
#ifndef TOUCHSTONE_SK_API_H
#define TOUCHSTONE_SK_API_H

#include <stddef.h>
#include <stdint.h>

#define TOUCHSTONE_SK_VERSION_MAJOR 0x000a0000u

/* Key flags (the key's, and an enrolment's). */
#define TOUCHSTONE_SK_USER_PRESENCE_REQD 0x01
#define TOUCHSTONE_SK_USER_VERIFICATION_REQD 0x04
#define TOUCHSTONE_SK_FORCE_OPERATION 0x10
#define TOUCHSTONE_SK_RESIDENT_KEY 0x20

/* Algorithms. */
#define TOUCHSTONE_SK_ECDSA 0
#define TOUCHSTONE_SK_ED25519 1

/* Results: 0 is success. */
#define TOUCHSTONE_SK_ERR_GENERAL (-1)
#define TOUCHSTONE_SK_ERR_UNSUPPORTED (-2)
#define TOUCHSTONE_SK_ERR_PIN_REQUIRED (-3)
#define TOUCHSTONE_SK_ERR_DEVICE_NOT_FOUND (-4)
#define TOUCHSTONE_SK_ERR_CREDENTIAL_EXISTS (-5)

struct sk_enroll_response {
    uint8_t flags;
    uint8_t *public_key;
    size_t public_key_len;
    uint8_t *key_handle;
    size_t key_handle_len;
    uint8_t *signature;
    size_t signature_len;
    uint8_t *attestation_cert;
    size_t attestation_cert_len;
    uint8_t *authdata;
    size_t authdata_len;
};

struct sk_sign_response {
    uint8_t flags;
    uint32_t counter;
    uint8_t *sig_r;
    size_t sig_r_len;
    uint8_t *sig_s;
    size_t sig_s_len;
};

struct sk_resident_key {
    uint32_t alg;
    size_t slot;
    char *application;
    struct sk_enroll_response key;
    uint8_t flags;
    uint8_t *user_id;
    size_t user_id_len;
};

struct sk_option {
    char *name;
    char *value;
    uint8_t required;
};

#endif
