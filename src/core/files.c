#include "core/files.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "granflow/error.h"

FILE *gf_file_open_input(const char *path, const char *mode, const char *what) {
    struct stat sb;
    if (stat(path, &sb) != 0) {
        GF_ERROR(GF_ERR_IO, "cannot open the %s '%s': %s", what, path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        GF_ERROR(GF_ERR_IO, "the %s '%s' is not a regular file (a %s)", what, path,
                 S_ISDIR(sb.st_mode)    ? "directory"
                 : S_ISFIFO(sb.st_mode) ? "FIFO, which would block until written to"
                                        : "device or socket");
        return NULL;
    }
    FILE *f = fopen(path, mode);
    if (!f)
        GF_ERROR(GF_ERR_IO, "cannot open the %s '%s': %s", what, path, strerror(errno));
    return f;
}
