#ifndef TOUCHSTONE_CFPRINT_SHIM_H
#define TOUCHSTONE_CFPRINT_SHIM_H
// libfprint 2 and the GLib/GIO pieces its API uses.
#include <fprint.h>
#include <glib.h>
#include <gio/gio.h>
#endif
