/* A time series written as CSV by rank 0, one row per sample, that a restarted run continues:
 * the rows up to the checkpoint's step are kept, those an interrupted run wrote after it are
 * dropped (so every step appears once). Statistics, forces on the geometry and particle tracks
 * share it. Every row begins with the step number. */
#ifndef GRANFLOW_CSV_SERIES_H
#define GRANFLOW_CSV_SERIES_H

#include <stdio.h>

#include "granflow/error.h"

/* Opens `path` (its directory made if missing) for appending rows: fresh with `header` (a full
 * line, newline included), or with resume_step > 0 the earlier file's rows with step <=
 * resume_step under the same header. `key` names the configuration key of the file for the
 * message when the earlier file is not one of these series (another header) or not writable. */
gf_status gf_csv_series_open(const char *path, const char *header, long resume_step,
                             const char *key, FILE **out);

#endif
