/* A small parallel run that meets a runtime error on one rank only (run by test_fail under
 * mpiexec): `fail_driver CASE`, with CASE one of
 *   coincident  two spheres with the same centre on the last rank (contact detection fails)
 *   nan         a non-finite velocity on the last rank (the solver or the state check fails)
 *   jump        a sphere of the last rank displaced by two subdomains (migration fails on the
 *               rank that receives it; needs at least 3 ranks)
 *   none        no fault: the run ends normally
 * The box is periodic in x and cut into one slab per rank along x; every rank holds a settled
 * layer of spheres on the floor, so every rank is busy in the solver's exchanges when the fault
 * strikes. The program ends its run as the granflow program does (gf_par_conclude). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "par/par.h"
#include "sim/sim.h"

static gf_status build(gf_sim *sim, const gf_par *par) {
    GF_TRY(gf_sim_init(sim, par));
    const double w = 0.04; /* slab width per rank */
    const double lo[3] = {0, 0, 0}, hi[3] = {w * par->size, 0.04, 0.04};
    const int per[3] = {1, 0, 0}, dims[3] = {par->size, 1, 1};
    GF_TRY(gf_sim_decompose(sim, dims, per, lo, hi));
    for (int d = 1; d < 3; ++d) {
        double n[3] = {0, 0, 0};
        n[d] = 1;
        GF_TRY(gf_walls_add(&sim->walls, lo, n, NULL, 0));
        n[d] = -1;
        GF_TRY(gf_walls_add(&sim->walls, hi, n, NULL, 0));
    }
    GF_TRY(gf_materials_set_friction(&sim->materials, 0, 0, 0.4));
    sim->dt = 1e-4;
    sim->gravity[2] = -9.81;
    sim->steps = 200;
    sim->progress_every = 0;
    const double r = 0.002;
    sim->margin_tolerance = 0.05 * r;
    /* A layer resting on the floor, 1% gaps, over the whole periodic length. */
    int nx = (int)(hi[0] / (2.02 * r)), ny = (int)(hi[1] / (2.02 * r)) - 1;
    int64_t id = 0;
    for (int j = 0; j < ny; ++j)
        for (int i = 0; i < nx; ++i) {
            double x[3] = {(i + 0.5) * 2.02 * r, (j + 1) * 2.02 * r, r};
            gf_particle rec;
            gf_particle_make_sphere(&rec, id++, x, r, 2500, 0);
            if (gf_decomp_owns(&sim->xch.decomp, x))
                GF_TRY(gf_particles_add(&sim->particles, &rec));
        }
    sim->next_id = id;
    sim->expected_particles = id;
    return GF_OK;
}

/* The owned particle nearest to the middle of this rank's slab (far from every ghost). */
static size_t middle(const gf_sim *sim) {
    const gf_decomp *d = &sim->xch.decomp;
    double c[3] = {0.5 * (d->sub_lo[0] + d->sub_hi[0]), 0.02, 0.0};
    size_t best = 0;
    double bd = INFINITY;
    for (size_t i = 0; i < sim->particles.n_local; ++i) {
        double dx = sim->particles.x[0][i] - c[0], dy = sim->particles.x[1][i] - c[1];
        if (dx * dx + dy * dy < bd) {
            bd = dx * dx + dy * dy;
            best = i;
        }
    }
    return best;
}

static gf_status inject(gf_sim *sim, const char *fault) {
    gf_particles *p = &sim->particles;
    size_t i = middle(sim);
    if (strcmp(fault, "coincident") == 0) {
        gf_particle rec;
        gf_particles_get(p, i, &rec);
        rec.id = sim->next_id; /* a fresh id: only the centre is shared */
        GF_TRY(gf_particles_add(p, &rec));
    } else if (strcmp(fault, "nan") == 0) {
        p->v[0][i] = NAN;
    } else if (strcmp(fault, "jump") == 0) {
        const gf_decomp *d = &sim->xch.decomp;
        double L = d->hi[0] - d->lo[0], width = d->sub_hi[0] - d->sub_lo[0];
        /* Two slabs on (periodically), lifted clear of the layer. */
        p->x[0][i] = fmod(p->x[0][i] + 2.0 * width, L);
        p->x[2][i] += 0.02;
    }
    return GF_OK;
}

int main(int argc, char **argv) {
    gf_par par;
    if (gf_par_init(&argc, &argv, &par) != GF_OK)
        return 1;
    gf_log_set_rank(par.rank);
    const char *fault = argc > 1 ? argv[1] : "none";
    gf_sim sim;
    int failed = gf_par_conclude(&par, build(&sim, &par), 1);
    if (!failed) {
        failed = gf_par_conclude(&par, gf_sim_start(&sim), 0);
        /* Settle for a few steps on every rank, then the fault strikes on the last rank. */
        sim.steps = 20;
        if (!failed)
            failed = gf_par_conclude(&par, gf_sim_run(&sim, NULL, NULL), 0);
        gf_status st = GF_OK;
        /* An added particle needs the ghosts rebuilt, on every rank alike. */
        if (strcmp(fault, "coincident") == 0) {
            gf_particles_clear_ghosts(&sim.particles);
            sim.ghosts_ready = 0;
        }
        if (!failed && par.rank == par.size - 1)
            st = inject(&sim, fault);
        sim.steps = 200;
        if (!failed)
            failed = gf_par_conclude(&par, st, 0);
        if (!failed)
            failed = gf_par_conclude(&par, gf_sim_run(&sim, NULL, NULL), 0);
        gf_sim_free(&sim);
    }
    if (!failed && par.rank == 0)
        printf("fail_driver: run finished normally\n");
    gf_par_finalize();
    return failed;
}
