/* The ABI's structures only (include/touchstone_sk_api.h): nothing to compile. */
#include "touchstone_sk_api.h"
