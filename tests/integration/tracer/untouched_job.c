/* A job that does what daemons and test harnesses do to their own process, for the tests that
 * the tracer never changes the job (issue 30, untouched_test.cpp). Output goes through write(2).
 *
 *   untouched_job fds PREFIX ROUNDS
 *       registers "fds.emb" (100 x 4 f32), reads row 1 ten times, then closes every fd >= 3
 *       (close_range), opens 16 files of its own (PREFIX.0 .. PREFIX.15, O_TRUNC: fds 3..18)
 *       and a socketpair (19, 20) -- the numbers a tracer that kept its descriptors low had --,
 *       and takes the numbers a tracer in the shared table keeps its own at (1000 up to
 *       min(RLIMIT_NOFILE - 16, 1100)): dup2 of its first file and of one socket end onto
 *       each, as a harness that sets up fixed numbers would, and a thread of its own does it
 *       again and again while the rounds run (any number, at any moment). Each of ROUNDS rounds
 *       reads row 2 ten times, writes a line to every file, sends a message each way over the
 *       socketpair and reads it back (nothing else may arrive), and sleeps 20 ms (flushes
 *       happen in between). At the end it checks that every number it holds is still open and
 *       that each file holds exactly its lines. Prints "fds: ROUNDS rounds, 16 files, N numbers
 *       taken" and exits 0, or says what went wrong on stderr ("write to fd 3 failed: Bad file
 *       descriptor") and exits 1.
 *   untouched_job fds-shared PREFIX ROUNDS
 *       the same in a process whose threads may not unshare their descriptor table (a seccomp
 *       filter answers EPERM, as Docker's default profile does without CAP_SYS_ADMIN), so the
 *       tracer works in the shared table; the numbers it keeps there are left alone (between
 *       its identity check and its write a dup2 onto them cannot be told apart: sink.h).
 *       Prints "... 0 numbers taken".
 *   untouched_job setsid
 *       prints whether it leads its process group and the result of setsid(); exits 0.
 *   untouched_job outlive GO DONE
 *       registers "outlive.emb" (100 x 4 f32), reads row 1 ten times, prints "ready <pid>",
 *       waits until the file GO exists (600 s at most), then reads row 2 ten times in each of
 *       5 rounds (edo_step() after each), prints "last line", writes "done" to DONE, exits 0. */
#include <edo/edo.h>

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static float weights[100 * 4];

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void out(const char* s) {
  if (write(1, s, strlen(s)) < 0) _exit(98);
}

static void lookups(int64_t t, int64_t row) {
  int64_t idx[10];
  for (int i = 0; i < 10; ++i) idx[i] = row;
  if (edo_table_lookup(t, idx, 10, EDO_I64, EDO_HOST, NULL) < 0) {
    fprintf(stderr, "untouched_job: lookup failed\n");
    exit(1);
  }
}

static int fail(const char* what, int fd) {
  fprintf(stderr, "%s %d failed: %s\n", what, fd, strerror(errno));
  return 1;
}

/* dup2() answers EBUSY while another thread's open() holds the number half-made (Linux): try
 * again, as robust programs do (the tracer's thread opens files too, when it must). */
static int dup2_retry(int from, int to) {
  int r;
  while ((r = dup2(from, to)) < 0 && errno == EBUSY) sleep_ms(1);
  return r;
}

#define KFILES 16

/* Each round's line in each file: "line K\n". */
static int check_file(const char* path, int rounds) {
  FILE* f = fopen(path, "r");
  char buf[256];
  int k = 0;
  while (f && fgets(buf, sizeof buf, f)) {
    char want[64];
    snprintf(want, sizeof want, "line %d\n", k++);
    if (strcmp(buf, want) != 0) {
      fprintf(stderr, "untouched_job: %s holds bytes the job did not write\n", path);
      fclose(f);
      return 1;
    }
  }
  if (f) fclose(f);
  if (k != rounds) {
    fprintf(stderr, "untouched_job: %s holds %d lines, not %d\n", path, k, rounds);
    return 1;
  }
  return 0;
}

/* One message each way over the socketpair, read back whole; nothing else may arrive. */
static int exchange(const int sv[2], const char* line, int n) {
  for (int dir = 0; dir < 2; ++dir) {
    char got[64];
    if (send(sv[dir], line, (size_t)n, 0) != n) return fail("send on fd", sv[dir]);
    if (recv(sv[1 - dir], got, (size_t)n, MSG_WAITALL) != n || memcmp(got, line, (size_t)n) != 0)
      return fail("recv on fd", sv[1 - dir]);
    if (recv(sv[1 - dir], got, sizeof got, MSG_DONTWAIT) >= 0) {
      fprintf(stderr, "untouched_job: bytes nobody sent arrived on fd %d\n", sv[1 - dir]);
      return 1;
    }
  }
  return 0;
}

/* Every thread of the process, those the tracer made already included (TSYNC), answers EPERM
 * to unshare(); the rest is allowed. (The job's own filter: x86-64 and aarch64 numbers.) */
static int refuse_unshare(void) {
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("prctl(PR_SET_NO_NEW_PRIVS)", 0);
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog) != 0) return fail("seccomp", 0);
  return 0;
}

/* The harness thread: takes the numbers lo..top again and again (its first file and one socket
 * end), until told to stop. */
struct taker {
  int file, sock, lo, top;
  volatile int stop;
};
static void* take_numbers(void* arg) {
  struct taker* t = (struct taker*)arg;
  while (!t->stop)
    for (int fd = t->lo; fd + 1 < t->top && !t->stop; fd += 2) {
      dup2_retry(t->file, fd);
      dup2_retry(t->sock, fd + 1);
    }
  return NULL;
}

static int fds(const char* prefix, int rounds, int shared) {
  if (shared && refuse_unshare()) return 1;
  int64_t t = edo_table_register("fds.emb", weights, 100, 4, EDO_F32, EDO_HOST);
  if (t < 0) return 1;
  lookups(t, 1);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
#ifdef SYS_close_range
  if (syscall(SYS_close_range, 3, ~0U, 0) != 0)
#endif
    for (long fd = 3; fd < (long)rl.rlim_cur && fd < 65536; ++fd) close((int)fd);
  /* Its own files and a socketpair, at the lowest numbers (3 and up): where a tracer that keeps
   * its descriptors at low numbers had them. */
  int files[KFILES];
  char paths[KFILES][512];
  for (int i = 0; i < KFILES; ++i) {
    snprintf(paths[i], sizeof paths[i], "%s.%d", prefix, i);
    files[i] = open(paths[i], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (files[i] < 0) return fail("open", i);
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return fail("socketpair", 0);
  /* And the numbers this tracer keeps its own at (from 1000, or 3/4 of a limit below ~1000) up
   * to 1100 (16 below a lower limit): its first file and socket dup'ed onto each, as a harness
   * that sets up fixed numbers would. */
  int top = rl.rlim_cur < 1116 ? (int)rl.rlim_cur - 16 : 1100;
  int lo = rl.rlim_cur > 1008 ? 1000 : (int)rl.rlim_cur * 3 / 4;
  int high = 0;
  for (int fd = lo; fd + 1 < top && !shared; fd += 2) {
    if (dup2_retry(files[0], fd) < 0 || dup2_retry(sv[0], fd + 1) < 0) return fail("dup2", fd);
    high += 2;
  }
  struct taker taker = {files[0], sv[0], lo, top, 0};
  pthread_t taker_thread;
  if (!shared && pthread_create(&taker_thread, NULL, take_numbers, &taker) != 0) return fail("pthread_create", 0);
  for (int k = 0; k < rounds; ++k) {
    lookups(t, 2);
    char line[64];
    int n = snprintf(line, sizeof line, "line %d\n", k);
    for (int i = 0; i < KFILES; ++i)
      if (write(files[i], line, (size_t)n) != n) return fail("write to fd", files[i]);
    if (exchange(sv, line, n)) return 1;
    sleep_ms(20);
  }
  taker.stop = 1;
  if (!shared) pthread_join(taker_thread, NULL);
  for (int i = 0; i < KFILES; ++i)
    if (fcntl(files[i], F_GETFD) < 0) return fail("descriptor closed under the job:", files[i]);
  for (int fd = lo; fd < lo + high; ++fd)
    if (fcntl(fd, F_GETFD) < 0) return fail("descriptor closed under the job:", fd);
  for (int i = 0; i < KFILES; ++i) {
    close(files[i]);
    if (check_file(paths[i], rounds)) return 1;
  }
  char msg[96];
  snprintf(msg, sizeof msg, "fds: %d rounds, %d files, %d numbers taken\n", rounds, KFILES, high);
  out(msg);
  return 0;
}

static int do_setsid(void) {
  char msg[128];
  snprintf(msg, sizeof msg, "group leader: %s\n", getpgrp() == getpid() ? "yes" : "no");
  out(msg);
  if (setsid() < 0)
    snprintf(msg, sizeof msg, "setsid failed: %s\n", strerror(errno));
  else
    snprintf(msg, sizeof msg, "setsid ok: leads session and group %s\n", getsid(0) == getpid() && getpgrp() == getpid() ? "yes" : "no");
  out(msg);
  return 0;
}

static int outlive(const char* go, const char* done) {
  int64_t t = edo_table_register("outlive.emb", weights, 100, 4, EDO_F32, EDO_HOST);
  if (t < 0) return 1;
  lookups(t, 1);
  edo_step();
  char msg[64];
  snprintf(msg, sizeof msg, "ready %d\n", (int)getpid());
  out(msg);
  for (int i = 0; i < 60000 && access(go, F_OK) != 0; ++i) sleep_ms(10);
  for (int k = 0; k < 5; ++k) {
    lookups(t, 2);
    edo_step();
  }
  out("last line\n");
  int fd = open(done, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "done", 4) != 4) return 1;
  close(fd);
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "fds") && argc == 4) return fds(argv[2], atoi(argv[3]), 0);
  if (!strcmp(mode, "fds-shared") && argc == 4) return fds(argv[2], atoi(argv[3]), 1);
  if (!strcmp(mode, "setsid") && argc == 2) return do_setsid();
  if (!strcmp(mode, "outlive") && argc == 4) return outlive(argv[2], argv[3]);
  fprintf(stderr, "usage: untouched_job fds|fds-shared FILE ROUNDS | setsid | outlive GO DONE\n");
  return 2;
}
