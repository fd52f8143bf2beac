/* For the MPI-calling modules (par, exchange): an MPI return code as a granflow status. */
#ifndef GF_PAR_INTERNAL_H
#define GF_PAR_INTERNAL_H

#include <mpi.h>

#include "granflow/error.h"

gf_status gf_par_check(int rc, const char *what, const char *file, int line);

#define MPI_TRY(call) GF_TRY(gf_par_check((call), #call, __FILE__, __LINE__))

#endif
