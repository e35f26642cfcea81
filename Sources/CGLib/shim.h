#ifndef TOUCHSTONE_CGLIB_SHIM_H
#define TOUCHSTONE_CGLIB_SHIM_H
// GLib's main contexts and sources (the main-loop threads).
#include <glib.h>
#endif
