#include "granflow/version.h"

#include <stdio.h>

#ifndef GF_VERSION
#define GF_VERSION "unknown"
#endif
#ifndef GF_GIT_REVISION
#define GF_GIT_REVISION "unknown"
#endif

const char *gf_version(void) {
    return GF_VERSION;
}

const char *gf_git_revision(void) {
    return GF_GIT_REVISION;
}

const char *gf_version_string(void) {
    static char buf[256];
    snprintf(buf, sizeof buf, "granflow %s (git %s, compiler %s, built %s)", GF_VERSION,
             GF_GIT_REVISION, __VERSION__, __DATE__);
    return buf;
}
