/* LD_PRELOAD shim for tests/test_write_limits.sh: posix_fallocate refused as some parallel and
 * network file systems refuse it (EOPNOTSUPP), so that the writer's other way of reserving a
 * file's space is exercised on any file system. */
#include <errno.h>
#include <sys/types.h>

int posix_fallocate(int fd, off_t offset, off_t len);
int posix_fallocate64(int fd, off_t offset, off_t len);

int posix_fallocate(int fd, off_t offset, off_t len) {
    (void)fd;
    (void)offset;
    (void)len;
    return EOPNOTSUPP;
}

int posix_fallocate64(int fd, off_t offset, off_t len) {
    return posix_fallocate(fd, offset, len);
}
