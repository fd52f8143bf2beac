/* libFuzzer target for the STL reader (issue 36).
 *
 * Any input, ASCII or binary, must give either triangles or one error naming the file, and never
 * a crash, a leak or undefined behaviour. What reads must then survive the way the program uses
 * it: the mesh is built (degenerate and non-finite triangles refused with a message), and
 * queries about it (the nearest points within a reach, overlap of a ball) give unit normals and
 * finite distances within the reach. The input is written to a file first, because the reader
 * takes a path (it must tell binary from ASCII by the file's size). Built with clang
 * -fsanitize=fuzzer,address,undefined when clang is there (tests/fuzz/CMakeLists.txt);
 * fuzz_stl_replay runs the same function over the seed corpus with any compiler. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "granflow/trimesh.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok, const char *what) {
    fuzz_require(ok, "fuzz_stl", what);
}

/* Queries at points spread over the mesh's bounding box (and beyond it). */
static void query(const gf_trimesh *m, const double *corners, size_t nt) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (size_t k = 0; k < 3 * nt; ++k)
        for (int d = 0; d < 3; ++d) {
            lo[d] = fmin(lo[d], corners[3 * k + d]);
            hi[d] = fmax(hi[d], corners[3 * k + d]);
        }
    double span = fmax(fmax(hi[0] - lo[0], hi[1] - lo[1]), hi[2] - lo[2]);
    if (!(span > 0.0) || !isfinite(span))
        return;
    int32_t *buf = NULL;
    size_t cap = 0;
    for (int k = 0; k < 27; ++k) {
        const double f[3] = {-0.25 + 0.75 * (k % 3), -0.25 + 0.75 * ((k / 3) % 3),
                             -0.25 + 0.75 * (k / 9)};
        double x[3];
        for (int d = 0; d < 3; ++d)
            x[d] = lo[d] + f[d] * (hi[d] - lo[d]);
        const double reach = 0.3 * span;
        gf_trimesh_hit hits[GF_TRIMESH_HITS_MAX];
        int count = 0;
        gf_status st = gf_trimesh_query(m, x, reach, hits, &count, &buf, &cap);
        require(st == GF_OK, "a query of a built mesh failed");
        require(count >= 0 && count <= GF_TRIMESH_HITS_MAX, "a query's count out of range");
        for (int h = 0; h < count; ++h) {
            double len = sqrt(hits[h].n[0] * hits[h].n[0] + hits[h].n[1] * hits[h].n[1] +
                              hits[h].n[2] * hits[h].n[2]);
            require(isfinite(hits[h].dist) && hits[h].dist <= reach * (1.0 + 1e-9),
                    "a hit beyond the reach or not finite");
            require(fabs(len - 1.0) < 1e-6, "a hit's normal is not a unit vector");
        }
        (void)gf_trimesh_overlap(m, x, 0.1 * span);
    }
    free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write_input("fuzz_stl", "", data, size);
    double *corners = NULL;
    size_t nt = 0;
    gf_status st = gf_trimesh_read_stl(fuzz_path, &corners, &nt);
    if (st != GF_OK) {
        require(st == GF_ERR_INPUT || st == GF_ERR_IO, "an error that is not about the input");
        require(strstr(gf_error_message(), fuzz_path) != NULL,
                "an error that does not name the file");
        require(corners == NULL, "triangles handed out with an error");
        gf_error_clear();
        return 0;
    }
    require(nt > 0 && corners != NULL, "no triangles and no error");
    gf_trimesh m;
    gf_trimesh_init(&m);
    st = gf_trimesh_build(&m, nt, corners);
    if (st == GF_OK)
        query(&m, corners, nt);
    else
        require(st == GF_ERR_INPUT, "building the mesh failed for a reason not its input's");
    gf_error_clear();
    gf_trimesh_free(&m);
    free(corners);
    return 0;
}
