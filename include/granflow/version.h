/* Version and build information, for logs and snapshot headers. */
#ifndef GRANFLOW_VERSION_H
#define GRANFLOW_VERSION_H

const char *gf_version(void);
const char *gf_git_revision(void);
/* "granflow 0.1.0 (git abc123, gcc 12.2.0, ...)" */
const char *gf_version_string(void);

#endif
