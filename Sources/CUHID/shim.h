#ifndef TOUCHSTONE_CUHID_SHIM_H
#define TOUCHSTONE_CUHID_SHIM_H
// The kernel's uhid ABI (linux-libc-dev): struct uhid_event and its types,
// for `touchstone fido serve --uhid`.
#include <linux/uhid.h>
#include <linux/input.h>
#endif
