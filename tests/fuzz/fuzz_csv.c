/* libFuzzer target for the CSV particle file reader (issue 36).
 *
 * Any input must give either particles or one error about the input, and never a crash, a leak
 * or undefined behaviour. The input is written to a .csv file that a configuration (a box with
 * walls, periodic along x, three materials and a clump, as configs/from-csv.cfg) names in its
 * Particles block; the run is set up as granflow sets it up (one rank, no MPI). What reads must
 * then hold: every particle inside the box (wrapped along x), with a finite state, a positive
 * radius and a non-negative inverse mass, and a step of the run ends without a crash. Built with
 * clang -fsanitize=fuzzer,address,undefined over the whole library when clang is there
 * (tests/fuzz/CMakeLists.txt); fuzz_csv_replay runs the same function over the seed corpus with
 * any compiler. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "fuzz_file.h"
#include "sim/sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void require(int ok, const char *what) {
    fuzz_require(ok, "fuzz_csv", what);
}

static const char *config =
    "Domain { min <0,0,0>; max <0.4,0.1,0.1>; box_walls true; periodic <1,0,0>; }\n"
    "Materials { friction 0.5; Material { name wood; density 700; }\n"
    "            Material { name steel; density 7800; } Material { name glass; density 2500; } }\n"
    "Clump { name pebble; Sphere { centre <0,0,0>; radius 0.006; }\n"
    "        Sphere { centre <0.007,0,0>; radius 0.005; } }\n"
    "Particles { file \"%s\"; material glass; }\n"
    "Time { dt 1e-4; steps 1; }\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (fuzz_write_input("fuzz_csv", ".csv", data, size))
        gf_log_set_quiet(1); /* the set-up's lines, once per input, would drown the fuzzer's */
    char text[2048];
    snprintf(text, sizeof text, config, fuzz_path);
    gf_config *cfg = NULL;
    require(gf_config_parse(text, strlen(text), "fuzz_csv.cfg", &cfg) == GF_OK,
            "the target's own configuration does not parse");
    gf_sim sim;
    require(gf_sim_init(&sim, NULL) == GF_OK, "gf_sim_init failed");
    gf_status st = gf_sim_configure(&sim, cfg, 1);
    gf_config_destroy(cfg);
    if (st != GF_OK) {
        require(st == GF_ERR_INPUT || st == GF_ERR_IO, "an error that is not about the input");
        require(gf_error_message()[0] != '\0', "an error without a message");
        gf_error_clear();
        gf_sim_free(&sim);
        return 0;
    }
    const gf_particles *p = &sim.particles;
    for (size_t i = 0; i < p->n_local; ++i) {
        for (int d = 0; d < 3; ++d) {
            require(isfinite(p->x[d][i]) && isfinite(p->v[d][i]) && isfinite(p->w[d][i]),
                    "a particle with a state that is not finite");
            require(p->x[d][i] >= sim.lo[d] && p->x[d][i] <= sim.hi[d],
                    "a particle outside the box");
            require(p->inv_mass[i] >= 0.0 && isfinite(p->inv_mass[i]) &&
                        p->inv_inertia[d][i] >= 0.0 && isfinite(p->inv_inertia[d][i]),
                    "a particle with a negative or non-finite inverse mass or inertia");
        }
        require(p->radius[i] > 0.0 && isfinite(p->radius[i]), "a particle without a radius");
    }
    /* Whatever the file held, a step ends (an error about the state is an answer too). */
    if (gf_sim_step(&sim) != GF_OK)
        gf_error_clear();
    gf_sim_free(&sim);
    return 0;
}
