#include "diag/run_observers.h"

#include "diag/forces.h"
#include "io/io.h"
#include "diag/stats.h"
#include "diag/tracks.h"

gf_status gf_run_observers_add(gf_observers *obs) {
    static const gf_observer_type *const types[] = {
        &gf_stats_observer_type, &gf_forces_observer_type, &gf_tracks_observer_type,
        &gf_output_observer_type};
    gf_observers_init(obs);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; ++k)
        GF_TRY(gf_observers_add(obs, types[k], NULL));
    return GF_OK;
}
