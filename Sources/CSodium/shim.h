#ifndef TOUCHSTONE_CSODIUM_SHIM_H
#define TOUCHSTONE_CSODIUM_SHIM_H
#include <sodium.h>
#endif
