/* Particles into a running simulation from records every rank holds some of (particle files,
 * checkpoints on another layout): each sent to its owner; and the check that the ids of a
 * simulation's particles are unique across the ranks. */
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"
#include "core/order.h"

gf_status gf_sim_check_unique_ids(const gf_sim *sim, const char *path, const char *hint) {
    const gf_particles *pp = &sim->particles;
    int P = sim->par ? sim->par->size : 1;
    size_t n = pp->n_local;
    int64_t *ids = NULL;
    size_t nin = 0;
    gf_status st = GF_OK;
    /* Each id goes to the rank id mod P, which sorts what it gets. */
    if (P == 1) {
        ids = gf_malloc(n + 1, sizeof *ids);
        if (!ids)
            st = gf_error_status();
        else
            memcpy(ids, pp->id, n * sizeof *ids);
        nin = n;
    } else {
        size_t *counts = gf_calloc((size_t)P, sizeof *counts);
        size_t *fill = gf_calloc((size_t)P + 1, sizeof *fill);
        int64_t *out = gf_malloc(n + 1, sizeof *out);
        if (!counts || !fill || !out)
            st = gf_error_status();
        for (size_t i = 0; st == GF_OK && i < n; ++i)
            counts[(uint64_t)pp->id[i] % (uint64_t)P]++;
        for (int k = 0; st == GF_OK && k < P; ++k)
            fill[k + 1] = fill[k] + counts[k];
        for (size_t i = 0; st == GF_OK && i < n; ++i)
            out[fill[(uint64_t)pp->id[i] % (uint64_t)P]++] = pp->id[i];
        for (int k = 0; st == GF_OK && k < P; ++k)
            counts[k] *= sizeof(int64_t);
        void *in = NULL;
        size_t inlen = 0;
        st = gf_par_agree(sim->par, st, NULL);
        if (st == GF_OK)
            st = gf_par_alltoallv_bytes(sim->par, out, counts, &in, &inlen);
        ids = in;
        nin = inlen / sizeof(int64_t);
        free(counts);
        free(fill);
        free(out);
    }
    if (st == GF_OK && nin > 1) {
        qsort(ids, nin, sizeof *ids, gf_cmp_i64);
        for (size_t i = 1; i < nin; ++i)
            if (ids[i] == ids[i - 1]) {
                st = GF_ERROR(GF_ERR_INPUT, "'%s': particle id %lld appears twice%s", path,
                              (long long)ids[i], hint ? hint : "");
                break;
            }
    }
    free(ids);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

gf_status gf_sim_place_particles(gf_sim *sim, const gf_particle *recs, size_t n) {
    gf_status st = GF_OK;
    if (!sim->distributed) {
        for (size_t i = 0; i < n && st == GF_OK; ++i)
            st = gf_particles_add(&sim->particles, &recs[i]);
        if (sim->par)
            st = gf_par_agree(sim->par, st, NULL);
        return st;
    }
    int P = sim->par->size;
    size_t *counts = gf_calloc((size_t)P, sizeof *counts);
    size_t *fill = gf_calloc((size_t)P + 1, sizeof *fill);
    gf_particle *sendbuf = gf_malloc(n + 1, sizeof *sendbuf);
    if (!counts || !fill || !sendbuf)
        st = gf_error_status();
    for (size_t i = 0; i < n && st == GF_OK; ++i)
        counts[gf_decomp_owner(&sim->xch.decomp, recs[i].x)]++;
    for (int k = 0; k < P && st == GF_OK; ++k)
        fill[k + 1] = fill[k] + counts[k];
    for (size_t i = 0; i < n && st == GF_OK; ++i)
        sendbuf[fill[gf_decomp_owner(&sim->xch.decomp, recs[i].x)]++] = recs[i];
    for (int k = 0; k < P && st == GF_OK; ++k)
        counts[k] *= sizeof(gf_particle);
    /* The all-to-all is collective: every rank enters it or none does. */
    st = gf_par_agree(sim->par, st, NULL);
    void *in = NULL;
    size_t inlen = 0;
    if (st == GF_OK)
        st = gf_par_alltoallv_bytes(sim->par, sendbuf, counts, &in, &inlen);
    if (st == GF_OK)
        st = gf_particles_reserve(&sim->particles,
                                  sim->particles.n_local + inlen / sizeof(gf_particle));
    for (size_t k = 0; st == GF_OK && k < inlen / sizeof(gf_particle); ++k) {
        gf_particle pr;
        memcpy(&pr, (char *)in + k * sizeof pr, sizeof pr);
        st = gf_particles_add(&sim->particles, &pr);
    }
    free(in);
    free(counts);
    free(fill);
    free(sendbuf);
    return gf_par_agree(sim->par, st, NULL);
}
