/* Stages: from a Stage block's time on, the run goes on with other contact laws, gravity, time
 * step, solver settings, inserts' times and outlets' state (docs/user-guide.md, Stages). Every
 * stage's values are worked out when the run is configured, from the configuration with the
 * overrides of that stage and of every stage before it applied, so that a bad value stops the
 * run before its first step and the values in force depend on the time alone: a restart applies
 * the stage due at the checkpoint's time and continues exactly. */
#ifndef GRANFLOW_SIM_STAGE_H
#define GRANFLOW_SIM_STAGE_H

#include "body/material.h"
#include "config/config.h"
#include "granflow/error.h"
#include "scenario/insertion.h"
#include "solver/solver.h"

/* What a stage sets: the values of every key a stage may change. */
typedef struct {
    char name[64];
    double time;
    char *set; /* the stage's overrides as written, for the log */
    gf_materials materials;
    gf_solver_params solver;
    double gravity[3], dt;
    double insert_start[GF_MAX_INSERTS], insert_stop[GF_MAX_INSERTS];
    int outlet_open[GF_MAX_OUTLETS];
} gf_stage;

typedef struct {
    int count;
    int current; /* the stage in force: -1, the configuration's own values (base) */
    gf_stage base;
    gf_stage *stage; /* count, in order of time */
} gf_stages;

/* Reads the Stage blocks of cfg and works out the values of each: times increasing, every
 * override one a stage may make (gf_config_schema_stage_free), every value as the modules check
 * it. Errors name the stage's block and override. The Stage blocks of cfg are read (marked
 * used); the rest is read from a copy. */
gf_status gf_stages_configure(gf_stages *s, gf_config *cfg);
void gf_stages_free(gf_stages *s);
/* The stage in force at `time` (-1: none yet): the last whose time is at most time + tol. */
int gf_stages_due(const gf_stages *s, double time, double tol);
/* The values of stage k (-1: the configuration's own). */
const gf_stage *gf_stages_values(const gf_stages *s, int k);

#endif
