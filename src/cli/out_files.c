/* Output files of a subcommand run (see out_files.h). */
#define _POSIX_C_SOURCE 200809L
#include "out_files.h"

#include <errno.h>
#include <string.h>

#include "cli_args.h"

int cli_same_file(const struct stat *input, const char *path) {
  struct stat st;
  return input && stat(path, &st) == 0 && st.st_dev == input->st_dev && st.st_ino == input->st_ino;
}

FILE *cli_open_output(cli_outputs *o, const char *path, const char *what) {
  if (strcmp(path, "-") == 0) return stdout;
  struct stat st;
  int is_new = stat(path, &st) != 0 && errno == ENOENT;
  FILE *f = fopen(path, "w");
  if (!f) {
    cli_fail(o->cmd, "cannot write the %s to %s: %s", what, path, strerror(errno));
    return NULL;
  }
  if (is_new && o->n_created < CLI_MAX_OUTPUTS) o->created[o->n_created++] = path;
  return f;
}

int cli_close_output(const cli_outputs *o, FILE *f, const char *path, const char *what,
                     int wrote_ok) {
  int bad = !wrote_ok || ferror(f);
  int err = errno;
  if (f == stdout)
    bad |= fflush(f) != 0;
  else
    bad |= fclose(f) != 0;
  if (bad)
    return cli_fail(o->cmd, "cannot write the %s to %s: %s", what,
                    strcmp(path, "-") ? path : "stdout", strerror(err ? err : errno));
  return 0;
}

void cli_remove_created(cli_outputs *o) {
  for (int i = 0; i < o->n_created; i++) remove(o->created[i]);
  o->n_created = 0;
}
