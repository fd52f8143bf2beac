/* Comparing effective configurations (the text gf_config_dump writes), key by key: what a
 * restart uses to refuse a checkpoint written with other physics. */
#ifndef GRANFLOW_CONFIG_COMPARE_H
#define GRANFLOW_CONFIG_COMPARE_H

#include "granflow/error.h"

/* Compares two effective configurations as gf_config_dump writes them, key by key, numbers and
 * vectors by value. Keys that may differ on a restart are ignored: those the registry flags
 * (gf_config_schema_restart_free; `granflow --help` lists them), and so are keys the stored
 * configuration lacks that have their registered default now (added by a later version: the
 * checkpoint's run had no such feature). *ndiff gets the number of other
 * keys that differ (or are in one only), and *report (malloc'd, NULL if none) one line for each of
 * the first twelve: "  Time.dt: 1e-4 in the checkpoint, 2e-4 now". */
gf_status gf_config_compare(const char *stored, const char *current, char **report, int *ndiff);
/* As gf_config_compare; *changed (malloc'd, NULL if none) gets a line of the same form for each
 * of the first twelve keys that differ among those a Stage may change (contact laws, gravity,
 * the time step, the solver, ...; gf_config_schema_stage_free): a restart may change them, and
 * says so. */
gf_status gf_config_compare_changes(const char *stored, const char *current, char **report,
                                    int *ndiff, char **changed);

#endif
