/* libgranflow.so is libgranflow.a linked whole (CMakeLists.txt, granflow_shared); a library
 * target needs a source of its own, and this is it. What a binding loaded at run time checks
 * first, gf_run_api, is in run.c. */
#include "granflow/run.h"

typedef int gf_run_shared_unit; /* ISO C wants a translation unit to declare something */
