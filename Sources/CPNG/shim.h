#ifndef TOUCHSTONE_CPNG_SHIM_H
#define TOUCHSTONE_CPNG_SHIM_H
// libpng's simplified API (png_image_*): reading and writing whole images
// in memory, with errors reported in the png_image's message, not by
// longjmp.
#include <png.h>
#endif
