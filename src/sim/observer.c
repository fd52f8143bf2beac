#include "sim/observer.h"

#include <stdlib.h>
#include <string.h>

void gf_observers_init(gf_observers *obs) {
    memset(obs, 0, sizeof *obs);
}

gf_status gf_observers_add(gf_observers *obs, const gf_observer_type *type, void **self) {
    if (obs->count >= GF_MAX_OBSERVERS)
        return GF_ERROR(GF_ERR_INPUT, "more than %d observers", GF_MAX_OBSERVERS);
    /* One byte at least: an observer without state still has an instance to find. */
    void *s = gf_calloc(type->size ? type->size : 1, 1);
    if (!s)
        return gf_error_status();
    obs->type[obs->count] = type;
    obs->self[obs->count++] = s;
    if (self)
        *self = s;
    return GF_OK;
}

void *gf_observers_find(const gf_observers *obs, const gf_observer_type *type) {
    for (int k = 0; k < obs->count; ++k)
        if (obs->type[k] == type)
            return obs->self[k];
    return NULL;
}

gf_status gf_observers_configure(gf_observers *obs, gf_config_block *root, const gf_sim *sim) {
    for (int k = 0; k < obs->count; ++k)
        if (obs->type[k]->configure)
            GF_TRY(obs->type[k]->configure(obs->self[k], root, sim));
    return GF_OK;
}

gf_status gf_observers_check(const gf_observers *obs, const gf_sim *sim) {
    gf_status st = GF_OK;
    if (!sim->par || sim->par->rank == 0)
        for (int k = 0; k < obs->count && st == GF_OK; ++k)
            if (obs->type[k]->check)
                st = obs->type[k]->check(obs->self[k]);
    if (sim->par)
        st = gf_par_agree(sim->par, st, NULL);
    return st;
}

gf_status gf_observers_start(gf_observers *obs, gf_sim *sim, int restarted) {
    for (int k = 0; k < obs->count; ++k)
        if (obs->type[k]->start)
            GF_TRY(obs->type[k]->start(obs->self[k], sim, restarted));
    return GF_OK;
}

gf_status gf_observers_observe(void *ctx, gf_sim *sim, int *stop) {
    gf_observers *obs = ctx;
    *stop = 0;
    for (int k = 0; k < obs->count; ++k) {
        if (!obs->type[k]->observe)
            continue;
        int s = 0;
        GF_TRY(obs->type[k]->observe(obs->self[k], sim, &s));
        *stop |= s;
    }
    return GF_OK;
}

gf_status gf_observers_finish(gf_observers *obs, gf_sim *sim) {
    gf_status first = GF_OK;
    for (int k = obs->count - 1; k >= 0; --k) {
        if (!obs->type[k]->finish)
            continue;
        gf_status st = obs->type[k]->finish(obs->self[k], sim);
        if (first == GF_OK)
            first = st;
    }
    return first;
}

void gf_observers_free(gf_observers *obs) {
    for (int k = obs->count - 1; k >= 0; --k) {
        if (obs->type[k]->release)
            obs->type[k]->release(obs->self[k]);
        free(obs->self[k]);
    }
    memset(obs, 0, sizeof *obs);
}
