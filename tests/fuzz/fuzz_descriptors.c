/*
 * The descriptor validator (src/core/matrix.c) behind the public solvers:
 * fuzzer-made dtypes, extents, strides, offsets and aliasing of the
 * arguments of gstat_eigh, gstat_cholesky, gstat_cholesky_solve and
 * gstat_triangular_solve, all pointing into one small arena between guard
 * bytes. An independent model (brute force over the elements) says which
 * descriptors are invalid; then
 * - a descriptor the model finds invalid (negative extent, stride < 1,
 *   two elements at one address, a span that overflows) must be refused, and
 *   so must device memory (a CPU context) unless the call has no work;
 * - a refused call writes nothing at all (arena and info untouched);
 * - an accepted call writes only bytes of its outputs' elements, its
 *   outputs overlap no other argument unless in place (the very same view),
 *   and eigenvalues come out ascending.
 * A descriptor the model finds valid but reaching past the arena is the
 * caller's error, not the library's: such inputs are not run.
 */
#include <math.h>
#include <string.h>

#include "fuzz_input.h"
#include "gstat/gstat.h"

enum { GUARD = 64, DATA = 1920, ARENA = GUARD + DATA + GUARD, MAX_ELEMS = DATA / 2 };
enum { M_OK, M_INVALID, M_OUTSIDE, M_DEVICE };
__extension__ typedef __int128 i128; /* exact spans of any int64 strides */

static uint8_t *arena, *before, *allowed;

typedef struct {
  gstat_matrix m;
  int kind;      /* M_* */
  int64_t count; /* elements (M_OK) */
  int64_t *addr; /* byte offsets into the data region, (b, i, j) order */
} arg;

static int64_t pick_stride(fz_input *in, int64_t natural) {
  static const int64_t wild[] = {0, -1, INT64_MAX, INT64_MIN, INT64_C(1) << 40, INT64_C(1) << 61};
  uint8_t c = fz_u8(in);
  if (c < 128) return natural;
  if (c < 224) return (int64_t)(c % 13) - 2;
  return wild[c % 6];
}

static int64_t pick_extent(fz_input *in, int64_t natural) {
  static const int64_t wild[] = {-1, 0, 1, 7, INT64_C(1) << 33, INT64_MAX};
  uint8_t c = fz_u8(in);
  if (c < 200) return natural;
  return c < 240 ? (int64_t)(c % 8) : wild[c % 6];
}

/* A descriptor of about batch x rows x cols at a fuzzer-chosen place. */
static void make_arg(fz_input *in, arg *a, int64_t batch, int64_t rows, int64_t cols) {
  gstat_matrix *m = &a->m;
  memset(m, 0, sizeof *m);
  uint8_t t = fz_u8(in);
  m->dtype = t < 250 ? (gstat_dtype)(1 + t % 3) : (gstat_dtype)(t % 5 == 0 ? 0 : 4);
  m->location = fz_u8(in) < 252 ? GSTAT_HOST : (gstat_location)(1 + (t & 1));
  m->batch = pick_extent(in, batch);
  m->rows = pick_extent(in, rows);
  m->cols = pick_extent(in, cols);
  int row_major = fz_u8(in) & 1;
  m->row_stride = pick_stride(in, row_major ? cols : 1);
  m->col_stride = pick_stride(in, row_major ? 1 : rows);
  m->batch_stride = pick_stride(in, rows * cols + (int64_t)(fz_u8(in) % 3));
  size_t es = gstat_dtype_size(m->dtype) ? gstat_dtype_size(m->dtype) : 1;
  int64_t off = fz_range(in, 0, DATA / (int64_t)es - 1) * (int64_t)es;
  m->data = arena + GUARD + off;
}

static int cmp64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* The model: M_INVALID, M_OUTSIDE or M_OK (with the element addresses). */
static void model(arg *a) {
  const gstat_matrix *m = &a->m;
  a->kind = M_INVALID;
  a->count = 0;
  size_t es = gstat_dtype_size(m->dtype);
  if (es == 0 || (m->location != GSTAT_HOST && m->location != GSTAT_CUDA)) return;
  int64_t ext[3] = {m->batch, m->rows, m->cols};
  int64_t str[3] = {m->batch_stride, m->row_stride, m->col_stride};
  i128 last = 0, count = 1;
  for (int d = 0; d < 3; d++) {
    if (ext[d] < 0) return;
    count *= ext[d];
    if (count > ((i128)1 << 62)) count = (i128)1 << 62; /* saturate: no i128 overflow */
  }
  a->kind = M_OK;
  if (count == 0) return;          /* empty: nothing is touched, wherever it points */
  if (m->location != GSTAT_HOST) { /* device memory with a CPU context: nothing to touch */
    a->kind = M_DEVICE;
    return;
  }
  for (int d = 0; d < 3; d++) {
    if (ext[d] <= 1) continue;
    if (str[d] < 1) {
      a->kind = M_INVALID;
      return;
    }
    last += (i128)(ext[d] - 1) * str[d];
    if (last > ((i128)1 << 100)) last = (i128)1 << 100; /* far beyond PTRDIFF_MAX already */
  }
  i128 base = (uint8_t *)m->data - (arena + GUARD);
  if (base + (last + 1) * (i128)es > DATA) {
    /* beyond PTRDIFF_MAX bytes the library must refuse: the model says invalid */
    a->kind = (last + 1) * (i128)es > PTRDIFF_MAX ? M_INVALID : M_OUTSIDE;
    return;
  }
  /* inside the arena: more elements than element slots is an overlap */
  if (count > MAX_ELEMS) {
    a->kind = M_INVALID;
    return;
  }
  a->count = (int64_t)count;
  for (int64_t b = 0, k = 0; b < ext[0]; b++)
    for (int64_t i = 0; i < ext[1]; i++)
      for (int64_t j = 0; j < ext[2]; j++, k++)
        a->addr[k] = (int64_t)base +
                     (int64_t)es * ((ext[0] > 1 ? b * str[0] : 0) + (ext[1] > 1 ? i * str[1] : 0) +
                                    (ext[2] > 1 ? j * str[2] : 0));
  int64_t *sorted = malloc(sizeof(int64_t) * (size_t)a->count);
  if (!sorted) abort();
  memcpy(sorted, a->addr, sizeof(int64_t) * (size_t)a->count);
  qsort(sorted, (size_t)a->count, sizeof(int64_t), cmp64);
  for (int64_t k = 1; k < a->count; k++)
    if (sorted[k] == sorted[k - 1]) a->kind = M_INVALID;
  free(sorted);
}

static size_t esize(const arg *a) {
  return gstat_dtype_size(a->m.dtype);
}

/* Whether any byte of x's elements is a byte of y's. */
static int overlaps(const arg *x, const arg *y) {
  for (int64_t k = 0; k < x->count; k++)
    for (int64_t l = 0; l < y->count; l++)
      if (x->addr[k] < y->addr[l] + (int64_t)esize(y) &&
          y->addr[l] < x->addr[k] + (int64_t)esize(x))
        return 1;
  return 0;
}

static int same_view(const arg *x, const arg *y) {
  return x->m.dtype == y->m.dtype && x->m.batch == y->m.batch && x->m.rows == y->m.rows &&
         x->m.cols == y->m.cols && x->count == y->count &&
         memcmp(x->addr, y->addr, sizeof(int64_t) * (size_t)x->count) == 0;
}

static double get(const arg *a, int64_t k) {
  const uint8_t *p = arena + GUARD + a->addr[k];
  switch (a->m.dtype) {
    case GSTAT_F32: {
      float f;
      memcpy(&f, p, sizeof f);
      return f;
    }
    case GSTAT_F64: {
      double d;
      memcpy(&d, p, sizeof d);
      return d;
    }
    default: {
      uint16_t h;
      memcpy(&h, p, sizeof h);
      return gstat_bf16_to_f32(h);
    }
  }
}

static gstat_ctx *context(void) {
  static gstat_ctx *ctx;
  if (!ctx) {
    gstat_ctx_options opt;
    gstat_ctx_options_init(&opt);
    opt.backend = GSTAT_BACKEND_CPU;
    opt.num_threads = 1;
    if (gstat_ctx_create(&ctx, &opt) != GSTAT_OK) abort();
    arena = malloc(ARENA);
    before = malloc(ARENA);
    allowed = malloc(ARENA);
    if (!arena || !before || !allowed) abort();
  }
  return ctx;
}

/* Finite values in every dtype: each 2-byte unit has a high byte of 0x3f or
 * 0xbf (sign, exponent near 1 for bf16, float and double alike). */
static void fill(fz_input *in) {
  for (int k = 0; k < ARENA; k += 2) {
    uint8_t v = fz_u8(in);
    arena[k] = v;
    arena[k + 1] = (uint8_t)(v & 1 ? 0xbf : 0x3f);
  }
}

static void dump(const arg *args, int nargs) {
  for (int k = 0; k < nargs; k++) {
    const gstat_matrix *m = &args[k].m;
    fprintf(stderr,
            "arg %d: model %d dtype %d location %d extents %lld x %lld x %lld strides %lld %lld "
            "%lld offset %td\n",
            k, args[k].kind, (int)m->dtype, (int)m->location, (long long)m->batch,
            (long long)m->rows, (long long)m->cols, (long long)m->batch_stride,
            (long long)m->row_stride, (long long)m->col_stride,
            (uint8_t *)m->data - (arena + GUARD));
  }
}

/* Checks one call's outcome against the model; args[0..nout) are outputs,
 * inplace[k] the input output k may be the same view of (or -1). */
static void judge(gstat_status st, arg *args, int nargs, int nout, const int *inplace,
                  const int64_t *info, const int64_t *info_before, int64_t ninfo) {
  int invalid = 0, empty = 0;
  for (int k = 0; k < nargs; k++)
    empty |= args[k].m.batch == 0 || args[k].m.rows == 0 || args[k].m.cols == 0;
  /* device data cannot be served by a CPU context, unless the call has no
   * work (an empty argument): then it may succeed without touching anything */
  for (int k = 0; k < nargs; k++)
    invalid |= args[k].kind == M_INVALID || (args[k].kind == M_DEVICE && !empty);
  if (st == GSTAT_EINVAL || st == GSTAT_ENOMEM || st == GSTAT_EUNSUPPORTED ||
      st == GSTAT_ENOTFINITE) {
    FZ_CHECK(memcmp(arena, before, ARENA) == 0, "refused (%d) but wrote to the arena", (int)st);
    FZ_CHECK(memcmp(info, info_before, sizeof(int64_t) * (size_t)ninfo) == 0,
             "refused but wrote info");
    return;
  }
  if (invalid) dump(args, nargs);
  FZ_CHECK(!invalid, "status %d for a descriptor the model finds invalid", (int)st);
  memset(allowed, 0, ARENA);
  for (int o = 0; o < nout; o++) {
    for (int k = 0; k < nargs; k++)
      if (k != o && args[k].count > 0 && overlaps(&args[o], &args[k]))
        FZ_CHECK(k == inplace[o] && same_view(&args[o], &args[k]),
                 "accepted output %d overlapping argument %d", o, k);
    for (int64_t e = 0; e < args[o].count; e++)
      memset(allowed + GUARD + args[o].addr[e], 1, esize(&args[o]));
  }
  for (int k = 0; k < ARENA; k++)
    FZ_CHECK(allowed[k] || arena[k] == before[k],
             "byte %d (data offset %d) outside the outputs changed", k, k - GUARD);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_input in = {data, size};
  gstat_ctx *ctx = context();
  uint8_t op = fz_u8(&in);
  int64_t batch = fz_range(&in, 0, 3), n = fz_range(&in, 0, 6), nrhs = fz_range(&in, 0, 4);
  int uplo = fz_u8(&in) < 250 ? (op >> 2) & 1 : 2;
  int64_t addr[4][MAX_ELEMS];
  arg args[4];
  for (int k = 0; k < 4; k++) args[k].addr = addr[k];
  int nargs, nout = 1, inplace[2] = {-1, -1};
  /* outputs first: eigh (V, w, A) or (w, A); cholesky (F, A); solves (X, F/T, B) */
  switch (op % 4) {
    case 0:
      make_arg(&in, &args[0], batch, n, n);
      make_arg(&in, &args[1], batch, n, 1);
      make_arg(&in, &args[2], batch, n, n);
      nargs = 3, nout = 2, inplace[0] = 2;
      if (fz_u8(&in) < 64) args[0].m = args[2].m; /* in place */
      break;
    case 1:
      make_arg(&in, &args[0], batch, n, n);
      make_arg(&in, &args[1], batch, n, n);
      nargs = 2, inplace[0] = 1;
      if (fz_u8(&in) < 64) args[0].m = args[1].m;
      break;
    default:
      make_arg(&in, &args[0], batch, n, nrhs);
      make_arg(&in, &args[1], batch, n, n);
      make_arg(&in, &args[2], batch, n, nrhs);
      nargs = 3, inplace[0] = 2;
      if (fz_u8(&in) < 64) args[0].m = args[2].m;
      break;
  }
  int values_only = op % 4 == 0 && (op >> 3) & 1;
  for (int k = 0; k < nargs; k++) model(&args[k]);
  for (int k = 0; k < nargs; k++)
    if (args[k].kind == M_OUTSIDE && !(values_only && k == 0)) return 0;
  fill(&in);
  memcpy(before, arena, ARENA);
  int64_t info[6], info_before[6];
  for (int k = 0; k < 6; k++) info[k] = info_before[k] = -77;
  /* info holds A's batch entries: only offered when no batch exceeds 3 */
  int small = 1;
  for (int k = 0; k < nargs; k++) small &= args[k].m.batch >= 0 && args[k].m.batch <= 3;
  int64_t *pinfo = small && (op >> 4) & 1 ? info : NULL;
  gstat_status st;
  switch (op % 4) {
    case 0:
      st = gstat_eigh(ctx, &args[2].m, (gstat_uplo)uplo, &args[1].m,
                      values_only ? NULL : &args[0].m, pinfo);
      if (values_only) args[0].count = 0, args[0].kind = M_OK;
      break;
    case 1: st = gstat_cholesky(ctx, &args[1].m, (gstat_uplo)uplo, &args[0].m, pinfo); break;
    case 2:
      st = gstat_cholesky_solve(ctx, &args[1].m, (gstat_uplo)uplo, &args[2].m, &args[0].m, pinfo);
      break;
    default:
      st = gstat_triangular_solve(ctx, &args[1].m, (gstat_uplo)uplo, (gstat_trans)((op >> 5) & 1),
                                  (gstat_diag)((op >> 6) & 1), &args[2].m, &args[0].m, pinfo);
      break;
  }
  judge(st, args, nargs, nout, inplace, info, info_before, 6);
  FZ_CHECK(info[3] == -77 && info[4] == -77 && info[5] == -77, "info written past batch 3");
  if (st == GSTAT_OK && op % 4 == 0 && args[1].count > 1 && args[1].m.cols == 1)
    for (int64_t b = 0; b < args[1].m.batch; b++)
      for (int64_t i = 1; i < args[1].m.rows; i++) {
        int64_t k = b * args[1].m.rows + i;
        FZ_CHECK(get(&args[1], k - 1) <= get(&args[1], k), "eigenvalues not ascending");
      }
  return 0;
}
