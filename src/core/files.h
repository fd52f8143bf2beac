/* Opening input files. */
#ifndef GRANFLOW_FILES_H
#define GRANFLOW_FILES_H

#include <stdio.h>

/* Opens `path` (`what` names it in messages: "configuration file") for reading if it is a
 * regular file. Anything else is refused before it is opened: a FIFO would block the open (and
 * `granflow --check`) until something writes into it, and a directory or device is no input.
 * NULL with the error set (gf_error_message) otherwise. */
FILE *gf_file_open_input(const char *path, const char *mode, const char *what);

#endif
