#include "io/csv_series.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

gf_status gf_csv_series_open(const char *path, const char *header, long resume_step,
                             const char *key, FILE **out) {
    *out = NULL;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        GF_TRY(gf_io_mkdirs(dir));
    }
    FILE *old = resume_step > 0 ? fopen(path, "r") : NULL;
    if (old) {
        /* The kept rows go to a temporary file renamed over the old one: a failure midway
         * leaves the earlier series intact. */
        char tmp[1100], line[65536];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *w = fopen(tmp, "w");
        int ok = w != NULL && fgets(line, sizeof line, old) != NULL && !strcmp(line, header);
        if (ok)
            fputs(header, w);
        while (ok && fgets(line, sizeof line, old))
            if (strtol(line, NULL, 10) <= resume_step)
                fputs(line, w);
        fclose(old);
        if (w && fclose(w) != 0)
            ok = 0;
        if (!ok || rename(tmp, path) != 0) {
            remove(tmp);
            return GF_ERROR(GF_ERR_IO,
                            "cannot continue the series in '%s' after the restart (not written "
                            "by this configuration, or not writable); move it away or set %s",
                            path, key);
        }
        *out = fopen(path, "a");
    } else {
        *out = fopen(path, "w");
        if (*out)
            fputs(header, *out);
    }
    if (!*out)
        return GF_ERROR(GF_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    return GF_OK;
}
