/* Minimal PNG writing and reading (8-bit RGB, zlib), for the plots the tools produce and for the
 * tests that check them. */
#ifndef GF_TOOLS_PNG_H
#define GF_TOOLS_PNG_H

#include <stdint.h>

/* Writes w x h RGB pixels (row-major, 3 bytes each). Returns 0 on success. */
int gf_png_write(const char *path, int w, int h, const uint8_t *rgb);

/* Reads an 8-bit RGB or RGBA, non-interlaced PNG into a malloc'd RGB buffer. Returns 0 on
 * success; on failure a message is in err. */
int gf_png_read(const char *path, int *w, int *h, uint8_t **rgb, char *err, int errsize);

#endif
