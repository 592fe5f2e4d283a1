/*
 * test_catalog_cli.c: `gpuplan catalog import` reads the whole SQL file or
 * imports nothing (review M4).  A failed realloc used to return the part
 * read so far, and a NUL byte ended the SQL there; both were imported and
 * reported as success.  The command is run as a child process (GPUPLAN_CLI,
 * set by CTest), under an address-space limit where the test needs memory
 * to run out.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#  define UNDER_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define UNDER_ASAN 1
#  endif
#endif
#ifndef UNDER_ASAN
#  define UNDER_ASAN 0
#endif

typedef struct result {
  int status;      /* exit code, or 128 + signal */
  char err[4096];  /* the child's stderr */
} result;

static const char *cli_path(void) {
  const char *p = getenv("GPUPLAN_CLI");
  if (!p || !*p) {
    print_message("GPUPLAN_CLI is not set; skipping\n");
    skip();
  }
  return p;
}

/*
 * Run `gpuplan catalog import DB SQLFILE` with at most `as_limit` bytes of
 * address space (0: no limit).  With feed set, SQLFILE is /dev/stdin and the
 * parent writes `feed` to it over and over until the child stops reading.
 */
static void run_import(const char *db, const char *sqlfile, rlim_t as_limit,
                       const char *feed, result *out) {
  char errpath[512];
  int pipefd[2] = {-1, -1}, fd, st = 0;
  pid_t pid;
  ssize_t n;
  const char *gp = cli_path();
  tmp_path(errpath, sizeof errpath, "cli-stderr.txt");
  if (feed) assert_int_equal(pipe(pipefd), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int nfd = open("/dev/null", O_WRONLY);
    if (efd < 0 || nfd < 0) _exit(120);
    dup2(efd, 2);
    dup2(nfd, 1);
    if (feed) {
      dup2(pipefd[0], 0);
      close(pipefd[0]);
      close(pipefd[1]);
    }
    if (as_limit) {
      struct rlimit rl;
      rl.rlim_cur = rl.rlim_max = as_limit;
      if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(121);
    }
    execl(gp, gp, "catalog", "import", db, feed ? "/dev/stdin" : sqlfile, (char *)NULL);
    _exit(122);
  }
  if (feed) {
    static char block[1 << 16];
    struct sigaction sa, old;
    size_t len = strlen(feed), used = 0;
    while (used + len <= sizeof block) {
      memcpy(block + used, feed, len);
      used += len;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, &old);
    close(pipefd[0]);
    /* Until the child exits and the pipe breaks (EPIPE). */
    do n = write(pipefd[1], block, used);
    while (n > 0 || (n < 0 && errno == EINTR));
    close(pipefd[1]);
    sigaction(SIGPIPE, &old, NULL);
  }
  assert_int_equal(waitpid(pid, &st, 0), pid);
  out->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  fd = open(errpath, O_RDONLY);
  assert_true(fd >= 0);
  n = read(fd, out->err, sizeof out->err - 1);
  close(fd);
  out->err[n > 0 ? n : 0] = '\0';
  if (out->status != 1) fprintf(stderr, "exit %d: %s\n", out->status, out->err);
}

/* A new user catalog file. */
static void make_catalog(char *path, size_t cap, const char *name) {
  counting c;
  gpuplan_ctx *ctx;
  gpuplan_catalog *cat = NULL;
  tmp_path(path, cap, name);
  unlink(path);
  counting_init(&c);
  ctx = counting_ctx(&c);
  assert_int_equal(gpuplan_catalog_open(ctx, path, GPUPLAN_CATALOG_CREATE | GPUPLAN_CATALOG_LAYER,
                                        &cat),
                   GPUPLAN_OK);
  gpuplan_catalog_free(cat);
  counting_done(&c, ctx);
}

static int count_rows(const char *path, const char *table) {
  sqlite3 *db;
  sqlite3_stmt *st;
  char sql[128];
  int n = -1;
  snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

static void test_catalog_cli__a_nul_byte_is_an_error(void **state) {
  static const char sql[] = "INSERT INTO catalog_info VALUES ('k1','v');\n"
                            "\0INSERT INTO catalog_info VALUES ('k2','v');\n";
  char db[512], file[512];
  result r;
  FILE *f;
  (void)state;
  make_catalog(db, sizeof db, "cli-nul.sqlite");
  tmp_path(file, sizeof file, "cli-nul.sql");
  f = fopen(file, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(sql, 1, sizeof sql - 1, f), sizeof sql - 1);
  fclose(f);
  run_import(db, file, 0, NULL, &r);
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "NUL"));
  assert_non_null(strstr(r.err, "cli-nul.sql"));
  assert_int_equal(count_rows(db, "catalog_info"), 0); /* not even the first row */
  unlink(file);
  unlink(db);
}

static void test_catalog_cli__dev_zero_is_refused_at_once(void **state) {
  char db[512];
  result r;
  (void)state;
  if (UNDER_ASAN) skip(); /* ASan reserves terabytes of address space */
  make_catalog(db, sizeof db, "cli-zero.sqlite");
  /* The review's reproducer ran under ulimit -v 2000000. */
  run_import(db, "/dev/zero", (rlim_t)2000000 * 1024, NULL, &r);
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "NUL"));
  assert_null(strstr(r.err, "imported /dev/zero"));
  unlink(db);
}

static void test_catalog_cli__running_out_of_memory_is_an_error(void **state) {
  char db[512];
  result r;
  (void)state;
  if (UNDER_ASAN) skip();
  make_catalog(db, sizeof db, "cli-oom.sqlite");
  /* Endless valid SQL (comments) until the buffer cannot grow. */
  run_import(db, NULL, (rlim_t)256 << 20,
             "/* a comment, repeated until memory runs out */\n", &r);
  assert_int_equal(r.status, 1);
  assert_non_null(strstr(r.err, "out of memory"));
  assert_int_equal(count_rows(db, "catalog_info"), 0);
  unlink(db);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_catalog_cli__a_nul_byte_is_an_error),
    cmocka_unit_test(test_catalog_cli__dev_zero_is_refused_at_once),
    cmocka_unit_test(test_catalog_cli__running_out_of_memory_is_an_error),
  };
  return cmocka_run_group_tests_name("catalog_cli", tests, NULL, NULL);
}
