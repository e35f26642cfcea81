#ifndef TOUCHSTONE_CGIO_SHIM_H
#define TOUCHSTONE_CGIO_SHIM_H
// GLib's GIO, for GDBus (the D-Bus front ends).
#include <glib.h>
#include <gio/gio.h>
#endif
