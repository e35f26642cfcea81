#ifndef TOUCHSTONE_CTSS2_SHIM_H
#define TOUCHSTONE_CTSS2_SHIM_H
// tpm2-tss: ESYS, the TCTI loader, marshalling and RC decoding.
#include <tss2/tss2_common.h>
#include <tss2/tss2_tpm2_types.h>
#include <tss2/tss2_esys.h>
#include <tss2/tss2_tctildr.h>
#include <tss2/tss2_tcti.h>
#include <tss2/tss2_mu.h>
#include <tss2/tss2_rc.h>

// The TSS headers define their constants as cast macros, which Swift does not
// import. Each is re-exported here under the same name with a `ts_` prefix;
// the values come from the headers themselves, never retyped.

// Response codes (TPM layer)
static const TPM2_RC ts_RC_SUCCESS          = TPM2_RC_SUCCESS;
static const TPM2_RC ts_RC_FMT1             = TPM2_RC_FMT1;
static const TPM2_RC ts_RC_VER1             = TPM2_RC_VER1;
static const TPM2_RC ts_RC_WARN             = TPM2_RC_WARN;
static const TPM2_RC ts_RC_AUTH_FAIL        = TPM2_RC_AUTH_FAIL;
static const TPM2_RC ts_RC_BAD_AUTH         = TPM2_RC_BAD_AUTH;
static const TPM2_RC ts_RC_POLICY           = TPM2_RC_POLICY;
static const TPM2_RC ts_RC_POLICY_FAIL      = TPM2_RC_POLICY_FAIL;
static const TPM2_RC ts_RC_VALUE            = TPM2_RC_VALUE;
static const TPM2_RC ts_RC_HANDLE           = TPM2_RC_HANDLE;
static const TPM2_RC ts_RC_INTEGRITY        = TPM2_RC_INTEGRITY;
static const TPM2_RC ts_RC_BINDING          = TPM2_RC_BINDING;
static const TPM2_RC ts_RC_SIZE             = TPM2_RC_SIZE;
static const TPM2_RC ts_RC_INSUFFICIENT     = TPM2_RC_INSUFFICIENT;
static const TPM2_RC ts_RC_SENSITIVE        = TPM2_RC_SENSITIVE;
static const TPM2_RC ts_RC_KEY              = TPM2_RC_KEY;
static const TPM2_RC ts_RC_TYPE             = TPM2_RC_TYPE;
static const TPM2_RC ts_RC_ATTRIBUTES       = TPM2_RC_ATTRIBUTES;
static const TPM2_RC ts_RC_SCHEME           = TPM2_RC_SCHEME;
static const TPM2_RC ts_RC_HASH             = TPM2_RC_HASH;
static const TPM2_RC ts_RC_NV_DEFINED       = TPM2_RC_NV_DEFINED;
static const TPM2_RC ts_RC_NV_UNINITIALIZED = TPM2_RC_NV_UNINITIALIZED;
static const TPM2_RC ts_RC_NV_SPACE         = TPM2_RC_NV_SPACE;
static const TPM2_RC ts_RC_NV_AUTHORIZATION = TPM2_RC_NV_AUTHORIZATION;
static const TPM2_RC ts_RC_HIERARCHY        = TPM2_RC_HIERARCHY;
static const TPM2_RC ts_RC_LOCKOUT          = TPM2_RC_LOCKOUT;
static const TPM2_RC ts_RC_RETRY            = TPM2_RC_RETRY;
static const TPM2_RC ts_RC_OBJECT_MEMORY    = TPM2_RC_OBJECT_MEMORY;
static const TPM2_RC ts_RC_SESSION_MEMORY   = TPM2_RC_SESSION_MEMORY;
static const TPM2_RC ts_RC_MEMORY           = TPM2_RC_MEMORY;
static const TPM2_RC ts_RC_OBJECT_HANDLES   = TPM2_RC_OBJECT_HANDLES;
static const TPM2_RC ts_RC_NV_RATE          = TPM2_RC_NV_RATE;
static const TPM2_RC ts_RC_INITIALIZE       = TPM2_RC_INITIALIZE;

// Layers and base codes of the TSS itself
static const TSS2_RC ts_RC_LAYER_MASK       = TSS2_RC_LAYER_MASK;
static const TSS2_RC ts_TPM_RC_LAYER        = TSS2_TPM_RC_LAYER;
static const TSS2_RC ts_TCTI_RC_LAYER       = TSS2_TCTI_RC_LAYER;
static const TSS2_RC ts_BASE_RC_IO_ERROR    = TSS2_BASE_RC_IO_ERROR;
static const TSS2_RC ts_BASE_RC_NO_CONNECTION = TSS2_BASE_RC_NO_CONNECTION;
static const TSS2_RC ts_BASE_RC_TRY_AGAIN   = TSS2_BASE_RC_TRY_AGAIN;
static const TSS2_RC ts_BASE_RC_MEMORY      = TSS2_BASE_RC_MEMORY;
static const TSS2_RC ts_BASE_RC_NOT_PERMITTED = TSS2_BASE_RC_NOT_PERMITTED;
static const TSS2_RC ts_BASE_RC_BAD_VALUE   = TSS2_BASE_RC_BAD_VALUE;
static const TSS2_RC ts_BASE_RC_BAD_REFERENCE = TSS2_BASE_RC_BAD_REFERENCE;
static const TSS2_RC ts_BASE_RC_INSUFFICIENT_BUFFER = TSS2_BASE_RC_INSUFFICIENT_BUFFER;
static const TSS2_RC ts_BASE_RC_RSP_AUTH_FAILED = TSS2_BASE_RC_RSP_AUTH_FAILED;
static const TSS2_RC ts_BASE_RC_MALFORMED_RESPONSE = TSS2_BASE_RC_MALFORMED_RESPONSE;

// Algorithms
static const TPM2_ALG_ID ts_ALG_ECC        = TPM2_ALG_ECC;
static const TPM2_ALG_ID ts_ALG_SHA256     = TPM2_ALG_SHA256;
static const TPM2_ALG_ID ts_ALG_AES        = TPM2_ALG_AES;
static const TPM2_ALG_ID ts_ALG_CFB        = TPM2_ALG_CFB;
static const TPM2_ALG_ID ts_ALG_NULL       = TPM2_ALG_NULL;
static const TPM2_ALG_ID ts_ALG_KEYEDHASH  = TPM2_ALG_KEYEDHASH;
static const TPM2_ALG_ID ts_ALG_ECDSA      = TPM2_ALG_ECDSA;
static const TPM2_ECC_CURVE ts_ECC_NIST_P256 = TPM2_ECC_NIST_P256;

// Object attributes
static const TPMA_OBJECT ts_OBJ_FIXEDTPM            = TPMA_OBJECT_FIXEDTPM;
static const TPMA_OBJECT ts_OBJ_FIXEDPARENT         = TPMA_OBJECT_FIXEDPARENT;
static const TPMA_OBJECT ts_OBJ_SENSITIVEDATAORIGIN = TPMA_OBJECT_SENSITIVEDATAORIGIN;
static const TPMA_OBJECT ts_OBJ_USERWITHAUTH        = TPMA_OBJECT_USERWITHAUTH;
static const TPMA_OBJECT ts_OBJ_ADMINWITHPOLICY     = TPMA_OBJECT_ADMINWITHPOLICY;
static const TPMA_OBJECT ts_OBJ_NODA                = TPMA_OBJECT_NODA;
static const TPMA_OBJECT ts_OBJ_RESTRICTED          = TPMA_OBJECT_RESTRICTED;
static const TPMA_OBJECT ts_OBJ_DECRYPT             = TPMA_OBJECT_DECRYPT;
static const TPMA_OBJECT ts_OBJ_SIGN                = TPMA_OBJECT_SIGN_ENCRYPT;

// NV attributes
static const TPMA_NV ts_NV_AUTHWRITE   = TPMA_NV_AUTHWRITE;
static const TPMA_NV ts_NV_OWNERREAD   = TPMA_NV_OWNERREAD;
static const TPMA_NV ts_NV_AUTHREAD    = TPMA_NV_AUTHREAD;
static const TPMA_NV ts_NV_NO_DA       = TPMA_NV_NO_DA;
static const TPMA_NV ts_NV_WRITTEN     = TPMA_NV_WRITTEN;
static const TPMA_NV ts_NV_TYPE_MASK   = TPMA_NV_TPM2_NT_MASK;
// The counter type, in the attributes' type field (TPM_NT_COUNTER << shift).
static const TPMA_NV ts_NV_TYPE_COUNTER = (TPMA_NV)TPM2_NT_COUNTER << TPMA_NV_TPM2_NT_SHIFT;

// Session types and attributes
static const TPM2_SE ts_SE_POLICY = TPM2_SE_POLICY;
static const TPM2_SE ts_SE_HMAC   = TPM2_SE_HMAC;
static const TPM2_SE ts_SE_TRIAL  = TPM2_SE_TRIAL;
static const TPMA_SESSION ts_SESSION_CONTINUE = TPMA_SESSION_CONTINUESESSION;
static const TPMA_SESSION ts_SESSION_DECRYPT  = TPMA_SESSION_DECRYPT;
static const TPMA_SESSION ts_SESSION_ENCRYPT  = TPMA_SESSION_ENCRYPT;

// Command codes (policy digests are computed over them)
static const TPM2_CC ts_CC_PolicyPCR         = TPM2_CC_PolicyPCR;
static const TPM2_CC ts_CC_PolicyNV          = TPM2_CC_PolicyNV;
static const TPM2_CC ts_CC_PolicyOR          = TPM2_CC_PolicyOR;
static const TPM2_CC ts_CC_PolicyAuthValue   = TPM2_CC_PolicyAuthValue;
static const TPM2_CC ts_CC_PolicyCommandCode = TPM2_CC_PolicyCommandCode;
static const TPM2_CC ts_CC_PolicySecret      = TPM2_CC_PolicySecret;
static const TPM2_CC ts_CC_Unseal            = TPM2_CC_Unseal;
static const TPM2_CC ts_CC_Sign              = TPM2_CC_Sign;
static const TPM2_CC ts_CC_NV_ChangeAuth     = TPM2_CC_NV_ChangeAuth;

// Misc
static const TPM2_EO ts_EO_EQ             = TPM2_EO_EQ;
static const TPM2_EO ts_EO_UNSIGNED_LE    = TPM2_EO_UNSIGNED_LE;
static const TPM2_SU ts_SU_CLEAR          = TPM2_SU_CLEAR;
static const TPM2_SU ts_SU_STATE          = TPM2_SU_STATE;
static const TPM2_CAP ts_CAP_TPM_PROPERTIES = TPM2_CAP_TPM_PROPERTIES;
static const TPM2_CAP ts_CAP_HANDLES      = TPM2_CAP_HANDLES;
static const TPM2_PT ts_PT_LOCKOUT_COUNTER  = TPM2_PT_LOCKOUT_COUNTER;
static const TPM2_PT ts_PT_MAX_AUTH_FAIL    = TPM2_PT_MAX_AUTH_FAIL;
static const TPM2_PT ts_PT_LOCKOUT_INTERVAL = TPM2_PT_LOCKOUT_INTERVAL;
static const TPM2_PT ts_PT_LOCKOUT_RECOVERY = TPM2_PT_LOCKOUT_RECOVERY;
static const TPM2_HANDLE ts_HR_NV_INDEX     = TPM2_HR_NV_INDEX;
static const TPM2_HANDLE ts_HR_PERSISTENT   = TPM2_HR_PERSISTENT;
static const TPM2_HANDLE ts_RH_OWNER        = TPM2_RH_OWNER;
static const TPM2_HANDLE ts_RH_NULL         = TPM2_RH_NULL;
static const TPM2_ST ts_ST_HASHCHECK        = TPM2_ST_HASHCHECK;

#endif
