/*
 * io.c: writing a result file (an HTML page, a snapshot) whole, without
 * waiting on what is not a file: a FIFO no one reads is refused at once
 * (was: the write blocked forever, review B-2).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int gpuplan__write_file(gpuplan_ctx *ctx, const char *path, const void *data, size_t len, const char *what) {
  const char *p = data;
  int fd, flags, e;
  /* O_NONBLOCK: opening a FIFO for writing with no reader fails (ENXIO)
   * instead of waiting; it is cleared before writing. */
  do fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0666);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    e = errno;
    if (e == ENXIO)
      return gpuplan__error(ctx, GPUPLAN_EIO, "%s %s: cannot write: a FIFO that nothing reads", what, path);
    gpuplan__error(ctx, GPUPLAN_EIO, "%s %s: cannot write: %s", what, path, strerror(e));
    gpuplan__error_detail(ctx, e);
    return GPUPLAN_EIO;
  }
  if ((flags = fcntl(fd, F_GETFL)) >= 0) (void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      e = n < 0 ? errno : EIO;
      close(fd);
      gpuplan__error(ctx, GPUPLAN_EIO, "%s %s: cannot write: %s", what, path, strerror(e));
      gpuplan__error_detail(ctx, e);
      return GPUPLAN_EIO;
    }
    p += n;
    len -= (size_t)n;
  }
  if (close(fd) != 0 && errno != EINTR) {
    e = errno;
    gpuplan__error(ctx, GPUPLAN_EIO, "%s %s: cannot write: %s", what, path, strerror(e));
    gpuplan__error_detail(ctx, e);
    return GPUPLAN_EIO;
  }
  return GPUPLAN_OK;
}
