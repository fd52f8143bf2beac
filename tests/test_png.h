/* Checks on the PNGs the tools write, for the tests that link the tools' library. */
#ifndef GF_TEST_PNG_H
#define GF_TEST_PNG_H

#include <stdint.h>
#include <string.h>

#include "lib/png.h"
#include "test_util.h"

/* Decodes path and checks its size; returns the RGB pixels (the caller frees them). */
static inline uint8_t *gf_test_read_png(const char *path, int want_w, int want_h) {
    int w = 0, h = 0;
    uint8_t *rgb = NULL;
    char err[256];
    if (gf_png_read(path, &w, &h, &rgb, err, sizeof err))
        fail_msg("%s", err);
    if (w != want_w || h != want_h)
        fail_msg("%s is %d x %d pixels, expected %d x %d", path, w, h, want_w, want_h);
    return rgb;
}

/* Decodes path and checks its height (the width depends on the labels); *w gets the width. */
static inline uint8_t *gf_test_read_png_height(const char *path, int *w, int want_h) {
    int h = 0;
    uint8_t *rgb = NULL;
    char err[256];
    if (gf_png_read(path, w, &h, &rgb, err, sizeof err))
        fail_msg("%s", err);
    if (h != want_h)
        fail_msg("%s is %d pixels high, expected %d", path, h, want_h);
    return rgb;
}

static inline void gf_test_expect_pixel(const uint8_t *rgb, int w, int px, int py,
                                        const uint8_t want[3]) {
    const uint8_t *got = rgb + 3 * ((size_t)py * w + px);
    if (memcmp(got, want, 3) != 0)
        fail_msg("pixel (%d, %d) is (%d, %d, %d), expected (%d, %d, %d)", px, py, got[0], got[1],
                 got[2], want[0], want[1], want[2]);
}

#endif
