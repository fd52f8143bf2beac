/* The `format` attribute of the root of granflow's HDF5 files: what the file is. */
#ifndef GF_H5_FORMAT_H
#define GF_H5_FORMAT_H

#define FORMAT_SNAPSHOT "granflow snapshot 1"
#define FORMAT_CHECKPOINT "granflow checkpoint 1"

#endif
