/*
 * A main() for the fuzz targets where libFuzzer is not linked (gcc builds,
 * the GPU machine, valgrind): each argument is a file or a directory of
 * files, each file one input replayed through LLVMFuzzerTestOneInput, so the
 * checked-in corpora (and any crash reproducer kept there) run as ordinary
 * regression tests. `-random=N` adds N random inputs of up to 4 KiB and
 * `-seconds=S` keeps making them for S seconds (seed from `-seed=K`), for
 * targets such as fuzz_solvers whose checks are worth running beyond the
 * corpus on a machine without clang (the CUDA backend).
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input being run, saved to ./crash-standalone when a check aborts (or
 * the target crashes), so a failure on a machine without libFuzzer leaves
 * its reproducer as libFuzzer would. */
static const uint8_t *current;
static size_t current_len;

static void save_input(int sig) {
  int fd = open("crash-standalone", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ssize_t put = write(fd, current, current_len);
    (void)put;
    close(fd);
  }
  static const char msg[] = "input saved to ./crash-standalone\n";
  ssize_t put = write(2, msg, sizeof msg - 1);
  (void)put;
  signal(sig, SIG_DFL);
  raise(sig);
}

static void run_one(const uint8_t *data, size_t len) {
  current = data;
  current_len = len;
  LLVMFuzzerTestOneInput(data, len);
}

static long run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(2);
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 4096;
      buf = realloc(buf, cap);
      if (!buf) exit(2);
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    if (got == 0) break;
    len += got;
  }
  fclose(f);
  run_one(buf, len);
  free(buf);
  return 1;
}

static long run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "no such file or directory: %s\n", path);
    exit(2);
  }
  if (!S_ISDIR(st.st_mode)) return run_file(path);
  DIR *d = opendir(path);
  if (!d) exit(2);
  long count = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    char *sub = malloc(len);
    if (!sub) exit(2);
    snprintf(sub, len, "%s/%s", path, e->d_name);
    count += run_path(sub);
    free(sub);
  }
  closedir(d);
  return count;
}

/* splitmix64: reproducible random inputs from -seed */
static uint64_t next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  signal(SIGABRT, save_input);
  signal(SIGSEGV, save_input);
  long files = 0, random = 0;
  double seconds = 0;
  uint64_t seed = 1;
  for (int a = 1; a < argc; a++) {
    if (strncmp(argv[a], "-random=", 8) == 0)
      random = atol(argv[a] + 8);
    else if (strncmp(argv[a], "-seconds=", 9) == 0)
      seconds = atof(argv[a] + 9);
    else if (strncmp(argv[a], "-seed=", 6) == 0)
      seed = strtoull(argv[a] + 6, NULL, 10);
    else
      files += run_path(argv[a]);
  }
  uint8_t buf[4096];
  uint64_t seed0 = seed;
  double t0 = now();
  long made = 0;
  while (made < random || (seconds > 0 && now() - t0 < seconds)) {
    size_t len = 1 + next(&seed) % sizeof buf;
    for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)next(&seed);
    run_one(buf, len);
    made++;
  }
  printf("%s: %ld files and %ld random inputs ran clean (seed %llu)\n", argv[0], files, made,
         (unsigned long long)seed0);
  return 0;
}
