/*
 * Self-check of the kernels in kernels.h against simple host references, plus
 * timings of the Jacobi eigensolver and the small Cholesky. Prints a PASS/FAIL
 * table and exits non-zero on any failure (timings never fail the run).
 *
 *   nvcc -std=c++17 -O3 -arch=sm_90 -Xptxas -v --compiler-options -Wall,-Wextra,-Werror \
 *        -o kernels_selftest kernels_selftest.cu elementwise.cu eigh_jacobi.cu cholesky_small.cu
 *   ./kernels_selftest          (links only cudart, statically by default; ~5 s on an H200)
 */
#include <algorithm>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "jacobi_common.cuh"
#include "kernels.h"

#define CK(call)                                                                                  \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(2);                                                                               \
    }                                                                                             \
  } while (0)

namespace {

typedef long double ld;
typedef std::vector<unsigned char> Bytes;

std::mt19937_64 rng(20240611);

double uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
double gauss() {
  return std::normal_distribution<double>(0.0, 1.0)(rng);
}
int64_t randint(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

/* ---- result table ---- */

struct Row {
  std::string name, detail;
  bool pass;
};
std::vector<Row> rows;
std::vector<std::string> timings;

std::string fmt(const char *f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

void record(const std::string &name, bool pass, const std::string &detail) {
  rows.push_back({name, detail, pass});
}

/* ---- host dtype helpers (src/core/matrix.c rules) ---- */

size_t dsize(int dt) {
  return dt == 2 ? 8 : dt == 1 ? 4 : 2;
}
const char *dname(int dt) {
  return dt == 1 ? "f32" : dt == 2 ? "f64" : "bf16";
}

uint16_t h_f32_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
float h_bf16_to_f32(uint16_t x) {
  uint32_t u = (uint32_t)x << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/* element idx of a raw buffer, widened to the compute type (as double) */
double hget(const Bytes &buf, int dt, int64_t idx) {
  const unsigned char *p = buf.data() + idx * dsize(dt);
  if (dt == 1) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  if (dt == 2) {
    double d;
    std::memcpy(&d, p, 8);
    return d;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h_bf16_to_f32(h);
}

/* store a compute-type value (float values are exact in double) as dt, rounding
 * like the kernels: f64 -> f32 to nearest, anything -> bf16 through f32 */
void hput(Bytes &buf, int dt, int64_t idx, double v) {
  unsigned char *p = buf.data() + idx * dsize(dt);
  if (dt == 1) {
    float f = (float)v;
    std::memcpy(p, &f, 4);
  } else if (dt == 2) {
    std::memcpy(p, &v, 8);
  } else {
    uint16_t h = h_f32_to_bf16((float)v);
    std::memcpy(p, &h, 2);
  }
}

bool same_elem(const Bytes &a, const Bytes &b, int dt, int64_t idx) {
  const size_t s = dsize(dt);
  if (std::memcmp(a.data() + idx * s, b.data() + idx * s, s) == 0) return true;
  const double x = hget(a, dt, idx), y = hget(b, dt, idx);
  return std::isnan(x) && std::isnan(y); /* NaN payloads may differ */
}

/* random finite values plus specials that exercise conversion and rounding */
void fill_random(Bytes &buf, int dt, int64_t count, bool specials) {
  static const uint32_t f32_specials[] = {
      0x3f808000u, /* bf16 tie, rounds down to even */
      0x3f818000u, /* bf16 tie, rounds up to even */
      0x3f808001u, /* just above a tie */
      0x7fc00001u, /* quiet NaN with payload */
      0xff800001u, /* signalling NaN */
      0x7f7fffffu, /* FLT_MAX: bf16 rounds to +inf */
      0x80000000u, /* -0 */
      0x7f800000u, /* +inf */
      0x00000001u, /* smallest subnormal */
      0x3e2aaaabu, /* 1/6 */
  };
  for (int64_t i = 0; i < count; ++i) {
    double v = uniform(-4, 4);
    if (specials && i % 7 == 3) {
      uint32_t u = f32_specials[(i / 7) % (sizeof f32_specials / sizeof f32_specials[0])];
      float f;
      std::memcpy(&f, &u, 4);
      if (dt == 1) {
        std::memcpy(buf.data() + i * 4, &f, 4);
        continue;
      }
      v = f;
    }
    if (dt == 2) {
      std::memcpy(buf.data() + i * 8, &v, 8);
    } else if (dt == 1) {
      float f = (float)v;
      std::memcpy(buf.data() + i * 4, &f, 4);
    } else {
      uint16_t h = h_f32_to_bf16((float)v);
      std::memcpy(buf.data() + i * 2, &h, 2);
    }
  }
}

/* ---- device buffers ---- */

struct Dev {
  void *p = nullptr;
  size_t bytes = 0;
  explicit Dev(size_t b) : bytes(b) {
    CK(cudaMalloc(&p, b ? b : 1));
  }
  ~Dev() {
    cudaFree(p);
  }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  void put(const void *h) {
    CK(cudaMemcpy(p, h, bytes, cudaMemcpyHostToDevice));
  }
  void get(void *h) const {
    CK(cudaMemcpy(h, p, bytes, cudaMemcpyDeviceToHost));
  }
  template <typename T>
  T *as() {
    return static_cast<T *>(p);
  }
};

struct Layout {
  int64_t batch, rows, cols, bs, rs, cs;
  int64_t footprint() const {
    return (batch - 1) * bs + (rows - 1) * rs + (cols - 1) * cs + 1;
  }
  int64_t off(int64_t b, int64_t i, int64_t j) const {
    return b * bs + i * rs + j * cs;
  }
};

const Layout layouts[] = {
    {3, 7, 5, 35, 1, 7},      /* dense column-major */
    {2, 40, 50, 2000, 50, 1}, /* row-major, tiled path */
    {5, 6, 3, 18, 3, 1},      /* row-major, small */
    {3, 9, 4, 100, 2, 23},    /* strided with gaps */
    {1, 33, 70, 5000, 71, 1}, /* row-major view with a padded leading dimension */
    {2, 64, 33, 4000, 1, 65}, /* column-major view, padded */
    {4, 1, 9, 20, 1, 2},      /* one row */
    {3, 11, 1, 13, 1, 1},     /* one column */
};

/* ---- gather / scatter ---- */

void test_gather_scatter() {
  int cases = 0, bad_gather = 0, bad_scatter = 0;
  std::string first_bad;
  for (const Layout &L : layouts) {
    const int64_t total = L.batch * L.rows * L.cols, fp = L.footprint();
    for (int sdt = 1; sdt <= 3; ++sdt)
      for (int ddt = 1; ddt <= 2; ++ddt) {
        /* gather: strided sdt -> dense ddt */
        Bytes src(fp * dsize(sdt)), got(total * dsize(ddt)), want(total * dsize(ddt));
        fill_random(src, sdt, fp, true);
        for (int64_t b = 0; b < L.batch; ++b)
          for (int64_t j = 0; j < L.cols; ++j)
            for (int64_t i = 0; i < L.rows; ++i)
              hput(want, ddt, b * L.rows * L.cols + i + j * L.rows, hget(src, sdt, L.off(b, i, j)));
        Dev ds(src.size()), dd(got.size());
        ds.put(src.data());
        CK(cudaMemset(dd.p, 0xab, dd.bytes));
        CK(gstat_cu_gather(ds.p, sdt, L.batch, L.rows, L.cols, L.bs, L.rs, L.cs, dd.p, ddt, 0));
        dd.get(got.data());
        ++cases;
        for (int64_t e = 0; e < total; ++e)
          if (!same_elem(got, want, ddt, e)) {
            ++bad_gather;
            if (first_bad.empty())
              first_bad = fmt("gather %s->%s %lldx%lld rs=%lld cs=%lld e=%lld", dname(sdt),
                              dname(ddt), (long long)L.rows, (long long)L.cols, (long long)L.rs,
                              (long long)L.cs, (long long)e);
            break;
          }
      }
    for (int sdt = 1; sdt <= 2; ++sdt)
      for (int ddt = 1; ddt <= 3; ++ddt) {
        /* scatter: dense sdt -> strided ddt; the gaps must keep their poison */
        Bytes src(total * dsize(sdt)), got(fp * dsize(ddt)), want(fp * dsize(ddt), 0xab);
        fill_random(src, sdt, total, true);
        for (int64_t b = 0; b < L.batch; ++b)
          for (int64_t j = 0; j < L.cols; ++j)
            for (int64_t i = 0; i < L.rows; ++i)
              hput(want, ddt, L.off(b, i, j), hget(src, sdt, b * L.rows * L.cols + i + j * L.rows));
        Dev ds(src.size()), dd(got.size());
        ds.put(src.data());
        CK(cudaMemset(dd.p, 0xab, dd.bytes));
        CK(gstat_cu_scatter(ds.p, sdt, L.batch, L.rows, L.cols, dd.p, ddt, L.bs, L.rs, L.cs, 0));
        dd.get(got.data());
        ++cases;
        if (std::memcmp(got.data(), want.data(), got.size()) != 0) {
          bool real = false; /* tolerate differing NaN payloads only */
          for (int64_t e = 0; e < fp; ++e) real |= !same_elem(got, want, ddt, e);
          if (real) {
            ++bad_scatter;
            if (first_bad.empty())
              first_bad =
                  fmt("scatter %s->%s %lldx%lld rs=%lld cs=%lld", dname(sdt), dname(ddt),
                      (long long)L.rows, (long long)L.cols, (long long)L.rs, (long long)L.cs);
          }
        }
      }
  }
  /* the host bf16 reference itself, on known answers */
  const struct {
    uint32_t in;
    uint16_t out;
  } known[] = {{0x3f808000u, 0x3f80}, {0x3f818000u, 0x3f82}, {0x3f808001u, 0x3f81},
               {0x7f7fffffu, 0x7f80}, {0x7fc00001u, 0x7fc0}, {0xff800001u, 0xffc0}};
  int bad_ref = 0;
  for (const auto &k : known) {
    float f;
    std::memcpy(&f, &k.in, 4);
    bad_ref += h_f32_to_bf16(f) != k.out;
  }
  record("gather (3 src x 2 dst dtypes)", bad_gather == 0 && bad_ref == 0,
         fmt("%d layouts%s%s", (int)(sizeof layouts / sizeof layouts[0]),
             first_bad.empty() ? "" : "; first bad: ", first_bad.c_str()));
  record("scatter (2 src x 3 dst dtypes)", bad_scatter == 0 && bad_ref == 0,
         fmt("%d cases total, bf16 RNE reference %s", cases, bad_ref ? "WRONG" : "ok"));
}

/* ---- test matrices ---- */

/* random orthogonal n x n (column-major) as a product of n Householder reflectors */
std::vector<double> random_orthogonal(int n) {
  std::vector<double> Q(n * n, 0.0), u(n);
  for (int i = 0; i < n; ++i) Q[i + i * n] = 1;
  for (int r = 0; r < n; ++r) {
    double nu = 0;
    for (int i = 0; i < n; ++i) nu += (u[i] = gauss()) * u[i];
    if (nu == 0) continue;
    for (int j = 0; j < n; ++j) { /* Q := (I - 2uu^T/u^Tu) Q */
      double d = 0;
      for (int i = 0; i < n; ++i) d += u[i] * Q[i + j * n];
      d *= 2 / nu;
      for (int i = 0; i < n; ++i) Q[i + j * n] -= d * u[i];
    }
  }
  return Q;
}

enum Family {
  kZero,
  kIdentity,
  kEven,
  kGeometric,
  kCluster,
  kRandomSym,
  kHuge,
  kTiny,
  kRankDef,
  kDiagonal,
  kRepeated,
  kFamilies
};
const char *family_name[] = {"zero",      "identity", "even",      "geometric",
                             "clustered", "random",   "sqrt(max)", "sqrt(min)",
                             "rank-def",  "diagonal", "repeated"};

/* A (column-major, symmetric) of the family; spectrum filled when known */
std::vector<double> make_symmetric(int n, int fam, double cond, double huge, double tiny,
                                   std::vector<double> *spectrum) {
  std::vector<double> A(n * n, 0.0), d(n, 0.0);
  bool known = true;
  switch (fam) {
    case kZero: break;
    case kIdentity:
      for (int i = 0; i < n; ++i) d[i] = 1;
      break;
    case kEven:
      for (int i = 0; i < n; ++i)
        d[i] = (n == 1 ? 1 : 1 - (double)i / (n - 1) * (1 - 1 / cond)) * (i % 3 ? 1 : -1);
      break;
    case kGeometric:
    case kHuge:
    case kTiny:
      for (int i = 0; i < n; ++i)
        d[i] = std::pow(cond, n == 1 ? 0 : -(double)i / (n - 1)) * (i % 2 ? -1 : 1);
      break;
    case kCluster:
      for (int i = 0; i < n; ++i) d[i] = i == 0 ? 1 : 1 / cond;
      break;
    case kRankDef:
      for (int i = 0; i < n; ++i) d[i] = i < (n + 1) / 2 ? uniform(0.5, 2) : 0;
      break;
    case kRepeated:
      for (int i = 0; i < n; ++i) d[i] = (double)(1 + i % 3);
      break;
    default: known = false;
  }
  if (fam == kRandomSym) {
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i) A[i + j * n] = A[j + i * n] = uniform(-1, 1);
  } else if (fam == kDiagonal) {
    for (int i = 0; i < n; ++i) A[i + i * n] = uniform(-1, 1);
  } else {
    const std::vector<double> Q = random_orthogonal(n);
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += Q[i + k * n] * d[k] * Q[j + k * n];
        A[i + j * n] = A[j + i * n] = s;
      }
  }
  const double scale = fam == kHuge ? huge : fam == kTiny ? tiny : 1;
  for (double &x : A) x *= scale;
  if (spectrum) {
    spectrum->clear();
    if (known) {
      for (double x : d) spectrum->push_back(x * scale);
      std::sort(spectrum->begin(), spectrum->end());
    }
  }
  return A;
}

/* ---- Jacobi eigensolver ---- */

struct EigStats {
  double resid = 0, orth = 0, werr = 0;
  int bad_info = 0, bad_order = 0, bad_sign = 0, bad_ratio = 0, bad_w = 0, bad_values_only = 0;
  int checked = 0;
  std::string worst;
};

/* LAPACK's ratios for matrix b of a batch; A is the exact (dtype-rounded) input */
template <typename T>
void check_eig(const T *A, const T *W, const T *V, const T *Wvo, int n, int info,
               const std::vector<double> &spectrum, const char *what, EigStats &st) {
  const ld ulp = sizeof(T) == 4 ? FLT_EPSILON : DBL_EPSILON;
  ld anorm = 0, rnorm = 0, onorm = 0, wmax = 0;
  ++st.checked;
  for (int j = 0; j < n; ++j) {
    ld ca = 0, cr = 0, co = 0;
    for (int i = 0; i < n; ++i) {
      ld r = A[i + j * n], o = i == j ? 1 : 0;
      for (int k = 0; k < n; ++k) {
        r -= (ld)V[i + k * n] * W[k] * V[j + k * n];
        o -= (ld)V[k + i * n] * V[k + j * n];
      }
      ca += std::fabs((ld)A[i + j * n]);
      cr += std::fabs(r);
      co += std::fabs(o);
    }
    anorm = std::max(anorm, ca);
    rnorm = std::max(rnorm, cr);
    onorm = std::max(onorm, co);
    wmax = std::max(wmax, std::fabs((ld)W[j]));
  }
  const double resid = (double)(rnorm / (std::max(anorm, (ld)FLT_MIN) * n * ulp));
  const double orth = (double)(onorm / (n * ulp));
  bool bad = false;
  if (info != 0) ++st.bad_info, bad = true;
  for (int j = 0; j + 1 < n; ++j)
    if (!(W[j] <= W[j + 1])) {
      ++st.bad_order, bad = true;
      break;
    }
  for (int j = 0; j < n; ++j) { /* largest-magnitude entry positive, first on ties */
    int at = 0;
    T best = -1;
    for (int i = 0; i < n; ++i)
      if (std::fabs(V[i + j * n]) > best) best = std::fabs(V[i + j * n]), at = i;
    if (V[at + j * n] < 0) {
      ++st.bad_sign, bad = true;
      break;
    }
  }
  if (!(resid <= 60 && orth <= 60)) ++st.bad_ratio, bad = true;
  if (!spectrum.empty()) { /* Weyl: |w_i - d_i| <= ||A - A_exact|| + ||residual|| */
    ld err = 0;
    for (int j = 0; j < n; ++j) err = std::max(err, std::fabs((ld)W[j] - (ld)spectrum[j]));
    const double rel = (double)(err / (std::max(anorm, (ld)FLT_MIN) * n * ulp));
    st.werr = std::max(st.werr, rel);
    if (!(rel <= 60)) ++st.bad_w, bad = true;
  }
  for (int j = 0; j < n; ++j)
    if (std::memcmp(&W[j], &Wvo[j], sizeof(T)) != 0) {
      ++st.bad_values_only, bad = true;
      break;
    }
  if (resid > st.resid || orth > st.orth || (bad && st.worst.empty()))
    st.worst = fmt("%s n=%d resid %.2f orth %.2f info %d", what, n, resid, orth, info);
  st.resid = std::max(st.resid, resid);
  st.orth = std::max(st.orth, orth);
}

template <typename T>
void test_jacobi(int dt) {
  const double eps = sizeof(T) == 4 ? FLT_EPSILON : DBL_EPSILON;
  const double huge = std::sqrt(sizeof(T) == 4 ? (double)FLT_MAX : DBL_MAX) * 0.5;
  const double tiny = std::sqrt(sizeof(T) == 4 ? (double)FLT_MIN : DBL_MIN) * 2;
  const int ns[] = {1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 20, 24, 31, 32, 33, 40, 48, 57, 63, 64};
  EigStats st;
  for (int n : ns)
    for (int uplo = 0; uplo <= 1; ++uplo) {
      const int batch = n <= 4 ? 203 : 3 * kFamilies + 2; /* partial warps and groups */
      std::vector<T> A(batch * n * n), Ain(batch * n * n), W(batch * n), Wvo(batch * n),
          V(batch * n * n);
      std::vector<std::vector<double>> spectra(batch);
      for (int b = 0; b < batch; ++b) {
        const int fam = b % kFamilies;
        const double cond = b % 2 ? 1 / eps : 1 / std::sqrt(eps);
        std::vector<double> M = make_symmetric(n, fam, cond, huge, tiny, &spectra[b]);
        for (int e = 0; e < n * n; ++e) {
          const int i = e % n, j = e / n;
          A[b * n * n + e] = (T)M[e];
          const bool read = uplo == 0 ? i >= j : i <= j;
          Ain[b * n * n + e] = read ? (T)M[e] : (T)NAN; /* the other triangle is never read */
        }
      }
      Dev dA(Ain.size() * sizeof(T)), dW(W.size() * sizeof(T)), dV(V.size() * sizeof(T)),
          dI(batch * sizeof(int));
      std::vector<int> info(batch), info_vo(batch);
      dA.put(Ain.data());
      CK(cudaMemset(dW.p, 0xff, dW.bytes));
      CK(cudaMemset(dV.p, 0xff, dV.bytes));
      CK(cudaMemset(dI.p, 0x7f, dI.bytes));
      CK(gstat_cu_eigh_jacobi(dt, dA.p, uplo, n, batch, dW.p, dV.p, dI.as<int>(), nullptr, 0));
      dW.get(W.data());
      dV.get(V.data());
      dI.get(info.data());
      CK(cudaMemset(dW.p, 0xff, dW.bytes));
      CK(gstat_cu_eigh_jacobi(dt, dA.p, uplo, n, batch, dW.p, nullptr, dI.as<int>(), nullptr, 0));
      dW.get(Wvo.data());
      dI.get(info_vo.data());
      for (int b = 0; b < batch; ++b) {
        const std::string what = fmt("%s uplo=%d", family_name[b % kFamilies], uplo);
        check_eig(&A[b * n * n], &W[b * n], &V[b * n * n], &Wvo[b * n], n, info[b] | info_vo[b],
                  spectra[b], what.c_str(), st);
      }
    }
  const bool pass =
      st.bad_info + st.bad_order + st.bad_sign + st.bad_ratio + st.bad_w + st.bad_values_only == 0;
  record(fmt("eigh_jacobi %s", dname(dt)), pass,
         fmt("%d matrices n<=64; max resid %.2f orth %.2f eig-err %.2f (limit 60); bad: info %d "
             "order %d sign %d ratio %d eig %d values-only %d; worst: %s",
             st.checked, st.resid, st.orth, st.werr, st.bad_info, st.bad_order, st.bad_sign,
             st.bad_ratio, st.bad_w, st.bad_values_only, st.worst.c_str()));
}

/* best-of-reps time of one launch, checked on a sample afterwards */
template <typename T>
void time_jacobi(int dt, int n, int batch, double target_ms) {
  std::vector<T> A((size_t)batch * n * n);
  for (int b = 0; b < batch; ++b)
    for (int j = 0; j < n; ++j)
      for (int i = 0; i <= j; ++i)
        A[(size_t)b * n * n + i + j * n] = A[(size_t)b * n * n + j + i * n] = (T)uniform(-1, 1);
  Dev dA(A.size() * sizeof(T)), dW((size_t)batch * n * sizeof(T)), dV(A.size() * sizeof(T)),
      dI(batch * sizeof(int)), dF(batch * sizeof(int));
  dA.put(A.data());
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  float best = 1e30f, best_vo = 1e30f;
  for (int rep = 0; rep < 12; ++rep)
    for (int vo = 0; vo <= 1; ++vo) {
      CK(cudaEventRecord(t0));
      CK(gstat_cu_eigh_jacobi(dt, dA.p, 0, n, batch, dW.p, vo ? nullptr : dV.p, dI.as<int>(),
                              dF.as<int>(), 0));
      CK(cudaEventRecord(t1));
      CK(cudaEventSynchronize(t1));
      float ms;
      CK(cudaEventElapsedTime(&ms, t0, t1));
      if (rep > 1) (vo ? best_vo : best) = std::min(vo ? best_vo : best, ms);
    }
  CK(gstat_cu_eigh_jacobi(dt, dA.p, 0, n, batch, dW.p, dV.p, dI.as<int>(), dF.as<int>(), 0));
  std::vector<T> W((size_t)batch * n), V(A.size());
  std::vector<int> info(batch), flags(batch);
  dW.get(W.data());
  dV.get(V.data());
  dI.get(info.data());
  dF.get(flags.data());
  EigStats st;
  const std::vector<double> none;
  int not_converged = 0;
  for (int b = 0; b < batch; ++b) not_converged += info[b] != 0 || flags[b] != 0;
  for (int b = 0; b < batch; b += std::max(1, batch / 64))
    check_eig(&A[(size_t)b * n * n], &W[(size_t)b * n], &V[(size_t)b * n * n], &W[(size_t)b * n], n,
              info[b], none, "random", st);
  const bool pass = not_converged == 0 && st.bad_ratio + st.bad_order + st.bad_sign == 0;
  record(fmt("eigh_jacobi %s %dx%d timed run", dname(dt), batch, n), pass,
         fmt("info or flag != 0: %d; sample of %d: max resid %.2f orth %.2f", not_converged,
             st.checked, st.resid, st.orth));
  timings.push_back(fmt("eigh_jacobi %s %6d x %2d: %8.4f ms with vectors, %8.4f ms values only%s",
                        dname(dt), batch, n, best, best_vo,
                        target_ms > 0 ? fmt("  (target <= %.2f ms: %s)", target_ms,
                                            best <= target_ms ? "met" : "MISSED")
                                            .c_str()
                                      : ""));
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
}

/* ---- eigenvector signs ---- */

template <typename T>
void host_fix_signs(T *v, int n) {
  for (int j = 0; j < n; ++j) {
    T *c = v + (size_t)j * n;
    int at = 0;
    T best = -1;
    for (int i = 0; i < n; ++i) {
      const T m = c[i] < 0 ? -c[i] : c[i];
      if (m > best) best = m, at = i;
    }
    if (c[at] < 0)
      for (int i = 0; i < n; ++i) c[i] = -c[i];
  }
}

template <typename T>
void test_fix_signs(int dt) {
  const int ns[] = {1, 3, 8, 9, 16, 20, 33, 100};
  int bad = 0, cases = 0;
  for (int n : ns) {
    const int batch = 5;
    std::vector<T> V((size_t)batch * n * n), got(V.size());
    for (size_t e = 0; e < V.size(); ++e) V[e] = (T)uniform(-1, 1);
    for (int c = 0; c < batch * n; c += 3) { /* ties, NaN, all-NaN columns */
      T *col = &V[(size_t)c * n];
      const int i1 = (int)randint(0, n - 1), i2 = (int)randint(0, n - 1);
      col[i1] = (T)(c % 2 ? -2 : 2);
      col[i2] = (T)(c % 4 < 2 ? -2 : 2);
      if (c % 5 == 0) col[(int)randint(0, n - 1)] = (T)NAN;
      if (c % 31 == 0)
        for (int i = 0; i < n; ++i) col[i] = (T)NAN;
    }
    Dev d(V.size() * sizeof(T));
    d.put(V.data());
    CK(gstat_cu_fix_signs(dt, d.p, n, batch, 0));
    d.get(got.data());
    for (int b = 0; b < batch; ++b) host_fix_signs(&V[(size_t)b * n * n], n);
    ++cases;
    for (size_t e = 0; e < V.size(); ++e)
      if (std::memcmp(&V[e], &got[e], sizeof(T)) != 0 &&
          !(std::isnan(V[e]) && std::isnan(got[e]))) {
        ++bad;
        break;
      }
  }
  record(fmt("fix_signs %s", dname(dt)), bad == 0,
         fmt("%d sizes, ties and NaNs; %d bad", cases, bad));
}

/* ---- non-finite scans ---- */

bool in_part(int tri, int64_t i, int64_t j) {
  switch (tri) {
    case 1: return i >= j;
    case 2: return i <= j;
    case 3: return i > j;
    case 4: return i < j;
  }
  return true;
}

void set_special(Bytes &buf, int dt, int64_t idx, int kind) {
  const double v = kind == 0 ? NAN : kind == 1 ? INFINITY : -INFINITY;
  hput(buf, dt, idx, v);
}

void test_find_nonfinite() {
  int cases = 0, bad = 0;
  std::string first_bad;
  for (const Layout &L : layouts)
    for (int dt = 1; dt <= 3; ++dt)
      for (int tri = 0; tri <= 4; ++tri)
        for (int planted = 0; planted <= 3; ++planted) {
          const int64_t fp = L.footprint();
          Bytes buf(fp * dsize(dt));
          fill_random(buf, dt, fp, false);
          unsigned long long want = ULLONG_MAX;
          for (int p = 0; p < planted; ++p) {
            const int64_t b = randint(0, L.batch - 1), i = randint(0, L.rows - 1),
                          j = randint(0, L.cols - 1);
            set_special(buf, dt, L.off(b, i, j), p % 3);
            if (in_part(tri, i, j))
              want = std::min(want, (unsigned long long)((b * L.rows + i) * L.cols + j));
          }
          Dev d(buf.size()), df(sizeof(unsigned long long));
          d.put(buf.data());
          unsigned long long got = ULLONG_MAX;
          df.put(&got);
          CK(gstat_cu_find_nonfinite(dt, d.p, tri, L.batch, L.rows, L.cols, L.bs, L.rs, L.cs,
                                     df.as<unsigned long long>(), 0));
          df.get(&got);
          ++cases;
          if (got != want) {
            ++bad;
            if (first_bad.empty())
              first_bad = fmt("%s tri=%d %lldx%lld: got %llu want %llu", dname(dt), tri,
                              (long long)L.rows, (long long)L.cols, got, want);
          }
        }
  record("find_nonfinite (3 dtypes, 5 parts)", bad == 0,
         fmt("%d cases, %d bad%s%s", cases, bad, first_bad.empty() ? "" : "; ", first_bad.c_str()));
}

/* Runs the Jacobi kernel (lower triangle, with vectors) on a batch of n x n
 * matrices of dtype dt; returns the flags, and the eigenvalues in w. */
std::vector<int> jacobi_flags_of(const Bytes &a, int dt, int n, int batch, Bytes &w) {
  Dev dA(a.size()), dW(batch * n * dsize(dt)), dV(a.size()), dI(batch * sizeof(int)),
      dF(batch * sizeof(int));
  dA.put(a.data());
  CK(cudaMemset(dF.p, 0x7f, dF.bytes));
  CK(gstat_cu_eigh_jacobi(dt, dA.p, 0, n, batch, dW.p, dV.p, dI.as<int>(), dF.as<int>(), 0));
  std::vector<int> flags(batch);
  w.assign(batch * n * dsize(dt), 0);
  dF.get(flags.data());
  dW.get(w.data());
  return flags;
}

/* The Jacobi kernel's flags (what the finishing pass did before): element b
 * with an infinite input entry, or whose values overflow the storage type,
 * gets flags[b] = 2; the others 0 and finite outputs. */
void test_jacobi_flags() {
  int bad = 0, cases = 0;
  for (int dt = 1; dt <= 3; ++dt)
    for (int n : {5, 16, 32, 33, 64}) {
      const int batch = 9;
      const int64_t nn = (int64_t)n * n;
      Bytes a(batch * nn * dsize(dt));
      std::vector<int> want(batch);
      for (int b = 0; b < batch; ++b)
        for (int j = 0; j < n; ++j)
          for (int i = j; i < n; ++i) {
            /* b % 3 == 1: huge entries, values beyond the type's range */
            const double x = b % 3 == 1 ? 3e38 : uniform(-1, 1) + (i == j ? n : 0);
            hput(a, dt, b * nn + i + j * n, dt == 2 && b % 3 == 1 ? 1e308 : x);
            hput(a, dt, b * nn + j + i * n, dt == 2 && b % 3 == 1 ? 1e308 : x);
          }
      for (int b = 0; b < batch; ++b) {
        /* +-Inf in the lower triangle (NaN couplings: test_jacobi_nan_coupling) */
        if (b % 3 == 2) set_special(a, dt, b * nn + (n - 1) + 0 * n, 1 + b % 2);
        want[b] = b % 3 != 0 ? 2 : 0;
      }
      Bytes w;
      const std::vector<int> flags = jacobi_flags_of(a, dt, n, batch, w);
      for (int b = 0; b < batch; ++b) {
        ++cases;
        bool ok = flags[b] == want[b];
        for (int j = 0; j < n && want[b] == 0; ++j)
          ok = ok && std::isfinite(hget(w, dt, b * n + j));
        bad += !ok;
      }
    }
  record("jacobi flags (3 dtypes)", bad == 0, fmt("%d elements, %d wrong", cases, bad));
}

/* A NaN coupling in an otherwise converged (diagonal) matrix must not be
 * taken for convergence: the element ends flagged (NaN outputs), never with
 * finite outputs and flag 0. */
void test_jacobi_nan_coupling() {
  int bad = 0, cases = 0;
  for (int dt = 1; dt <= 3; ++dt)
    for (int n : {16, 32, 33, 64}) {
      const int batch = 3;
      const int64_t nn = (int64_t)n * n;
      Bytes a(batch * nn * dsize(dt));
      for (int b = 0; b < batch; ++b)
        for (int j = 0; j < n; ++j)
          for (int i = 0; i < n; ++i) hput(a, dt, b * nn + i + (int64_t)j * n, i == j ? 1 + i : 0);
      for (int b = 0; b < batch; ++b) /* lower triangle, a different pair each */
        set_special(a, dt, b * nn + (n / 2 + b) + (int64_t)(b + 1) * n, 0);
      Bytes w;
      const std::vector<int> flags = jacobi_flags_of(a, dt, n, batch, w);
      for (int b = 0; b < batch; ++b, ++cases) bad += flags[b] != 2;
    }
  record("jacobi NaN coupling (3 dtypes)", bad == 0,
         fmt("%d elements, %d not flagged", cases, bad));
}

/* bf16 storage: the same float computation as dtype 1 on the widened input,
 * so every output must be the float result rounded to nearest even, bit for
 * bit. */
void test_jacobi_bf16() {
  int bad = 0, compared = 0;
  for (int n : {1, 5, 16, 17, 32, 40, 64})
    for (int uplo = 0; uplo <= 1; ++uplo) {
      const int batch = 37;
      std::vector<uint16_t> a16((size_t)batch * n * n);
      std::vector<float> a32(a16.size());
      for (int b = 0; b < batch; ++b)
        for (int j = 0; j < n; ++j)
          for (int i = j; i < n; ++i) {
            const uint16_t h = h_f32_to_bf16((float)uniform(-4, 4));
            for (size_t e :
                 {(size_t)b * n * n + i + (size_t)j * n, (size_t)b * n * n + j + (size_t)i * n}) {
              a16[e] = h;
              const uint32_t u = (uint32_t)h << 16;
              std::memcpy(&a32[e], &u, 4);
            }
          }
      Dev d16(a16.size() * 2), d32(a32.size() * 4), w16((size_t)batch * n * 2),
          w32((size_t)batch * n * 4), v16(a16.size() * 2), v32(a32.size() * 4),
          i16(batch * sizeof(int)), i32(batch * sizeof(int));
      d16.put(a16.data());
      d32.put(a32.data());
      CK(gstat_cu_eigh_jacobi(3, d16.p, uplo, n, batch, w16.p, v16.p, i16.as<int>(), nullptr, 0));
      CK(gstat_cu_eigh_jacobi(1, d32.p, uplo, n, batch, w32.p, v32.p, i32.as<int>(), nullptr, 0));
      std::vector<uint16_t> W16((size_t)batch * n), V16(a16.size());
      std::vector<float> W32(W16.size()), V32(a32.size());
      std::vector<int> I16(batch), I32(batch);
      w16.get(W16.data());
      v16.get(V16.data());
      w32.get(W32.data());
      v32.get(V32.data());
      i16.get(I16.data());
      i32.get(I32.data());
      for (size_t e = 0; e < W16.size(); ++e) bad += W16[e] != h_f32_to_bf16(W32[e]);
      for (size_t e = 0; e < V16.size(); ++e) bad += V16[e] != h_f32_to_bf16(V32[e]);
      for (int b = 0; b < batch; ++b) bad += I16[b] != I32[b];
      compared += (int)(W16.size() + V16.size());
    }
  record("jacobi bf16 storage", bad == 0,
         fmt("%d outputs vs float rounded: %d differ", compared, bad));
}

/* ---- Cholesky ---- */

template <typename T>
void test_cholesky(int dt) {
  const ld ulp = sizeof(T) == 4 ? FLT_EPSILON : DBL_EPSILON;
  const int ns[] = {1, 2, 3, 4, 5, 8, 13, 16, 17, 31, 32, 33, 47, 64};
  double worst = 0;
  int bad_info = 0, bad_upper = 0, bad_resid = 0, bad_ref = 0, bad_nan = 0, checked = 0;
  std::string worst_case;
  for (int n : ns) {
    const int batch = n <= 8 ? 101 : 19;
    std::vector<T> A((size_t)batch * n * n), in(A.size()), L(A.size());
    std::vector<int> want_info(batch, 0), info(batch);
    for (int b = 0; b < batch; ++b) {
      std::vector<double> B(n * n);
      for (double &x : B) x = uniform(-1, 1);
      T *a = &A[(size_t)b * n * n];
      for (int j = 0; j < n; ++j)
        for (int i = j; i < n; ++i) {
          double s = i == j ? n : 0;
          for (int k = 0; k < n; ++k) s += B[i + k * n] * B[j + k * n];
          a[i + j * n] = a[j + i * n] = (T)s;
        }
      if (b % 4 == 3) { /* leading minor of order k not positive definite */
        const int k = (int)randint(1, n);
        a[(k - 1) + (k - 1) * n] = (T)-1;
        want_info[b] = k;
      }
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < n; ++i)
          in[(size_t)b * n * n + i + j * n] = i >= j ? a[i + j * n] : (T)NAN;
    }
    Dev d(in.size() * sizeof(T)), di(batch * sizeof(int));
    d.put(in.data());
    CK(cudaMemset(di.p, 0x7f, di.bytes));
    CK(gstat_cu_cholesky_small(dt, d.p, n, batch, di.as<int>(), 0));
    d.get(L.data());
    di.get(info.data());
    for (int b = 0; b < batch; ++b) {
      if (info[b] != want_info[b]) {
        ++bad_info;
        continue;
      }
      const T *a = &A[(size_t)b * n * n], *l = &L[(size_t)b * n * n];
      if (want_info[b]) { /* a failed element is all NaN */
        bool all_nan = true;
        for (int e = 0; e < n * n; ++e) all_nan &= std::isnan(l[e]);
        bad_nan += !all_nan;
        continue;
      }
      ++checked;
      bool upper_ok = true;
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < j; ++i) upper_ok &= l[i + j * n] == 0 && !std::signbit(l[i + j * n]);
      bad_upper += !upper_ok;
      /* host reference in long double, and ||A - L L^T||_1 / (||A||_1 n ulp) */
      std::vector<ld> R(n * n, 0);
      for (int j = 0; j < n; ++j) {
        ld s = a[j + j * n];
        for (int k = 0; k < j; ++k) s -= R[j + k * n] * R[j + k * n];
        R[j + j * n] = std::sqrt(s);
        for (int i = j + 1; i < n; ++i) {
          ld t = a[i + j * n];
          for (int k = 0; k < j; ++k) t -= R[i + k * n] * R[j + k * n];
          R[i + j * n] = t / R[j + j * n];
        }
      }
      ld anorm = 0, rnorm = 0, maxdiff = 0, maxl = 0;
      for (int j = 0; j < n; ++j) {
        ld ca = 0, cr = 0;
        for (int i = 0; i < n; ++i) {
          ld r = a[i + j * n];
          for (int k = 0; k <= std::min(i, j); ++k) r -= (ld)l[i + k * n] * l[j + k * n];
          ca += std::fabs((ld)a[i + j * n]);
          cr += std::fabs(r);
          if (i >= j) {
            maxdiff = std::max(maxdiff, std::fabs(R[i + j * n] - (ld)l[i + j * n]));
            maxl = std::max(maxl, std::fabs(R[i + j * n]));
          }
        }
        anorm = std::max(anorm, ca);
        rnorm = std::max(rnorm, cr);
      }
      const double ratio = (double)(rnorm / (anorm * n * ulp));
      if (ratio > worst) worst = ratio, worst_case = fmt("n=%d", n);
      bad_resid += !(ratio <= 60);
      bad_ref += !(maxdiff <= 60 * n * ulp * maxl); /* A is well conditioned (diagonal shift n) */
    }
  }
  record(fmt("cholesky_small %s", dname(dt)),
         bad_info + bad_upper + bad_resid + bad_ref + bad_nan == 0,
         fmt("%d factored (+ not-PD cases), max resid %.2f (%s); bad: info %d upper %d resid %d "
             "vs-host %d not-NaN %d",
             checked, worst, worst_case.c_str(), bad_info, bad_upper, bad_resid, bad_ref, bad_nan));
}

template <typename T>
void time_cholesky(int dt, int n, int batch, double target_ms) {
  std::vector<T> A((size_t)batch * n * n);
  for (int b = 0; b < batch; ++b) {
    T *a = &A[(size_t)b * n * n];
    for (int j = 0; j < n; ++j)
      for (int i = j; i < n; ++i) a[i + j * n] = a[j + i * n] = (T)(i == j ? n : uniform(-1, 1));
  }
  Dev d(A.size() * sizeof(T)), work(A.size() * sizeof(T)), di(batch * sizeof(int));
  d.put(A.data());
  cudaEvent_t t0, t1;
  CK(cudaEventCreate(&t0));
  CK(cudaEventCreate(&t1));
  float best = 1e30f;
  for (int rep = 0; rep < 12; ++rep) {
    CK(cudaMemcpy(work.p, d.p, d.bytes, cudaMemcpyDeviceToDevice));
    CK(cudaEventRecord(t0));
    CK(gstat_cu_cholesky_small(dt, work.p, n, batch, di.as<int>(), 0));
    CK(cudaEventRecord(t1));
    CK(cudaEventSynchronize(t1));
    float ms;
    CK(cudaEventElapsedTime(&ms, t0, t1));
    if (rep > 1) best = std::min(best, ms);
  }
  std::vector<int> info(batch);
  di.get(info.data());
  int failed = 0;
  for (int x : info) failed += x != 0;
  record(fmt("cholesky_small %s %dx%d timed run", dname(dt), batch, n), failed == 0,
         fmt("info!=0: %d", failed));
  timings.push_back(fmt("cholesky_small %s %6d x %2d: %8.4f ms%s", dname(dt), batch, n, best,
                        target_ms > 0 ? fmt("  (target well under %.3f ms: %s)", target_ms,
                                            best < target_ms ? "met" : "MISSED")
                                            .c_str()
                                      : ""));
  CK(cudaEventDestroy(t0));
  CK(cudaEventDestroy(t1));
}

/* ---- the Jacobi rotation's reciprocal square root ---- */

template <typename T>
__global__ void rsqrt_kernel(const T *x, T *r, int count) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < count) r[i] = gstat_cu::Prec<T>::rsqrt(x[i]);
}

/* Prec<T>::rsqrt against 1/sqrt in long double, in ulps of the result, over
 * the arguments the rotation gives it: d^2 + o^2 in [4 eps^2, 16 n^2] and
 * c^2 in [1/2, 1]. Orthogonality of the eigenvectors rests on c^2 + s^2 = 1. */
template <typename T>
void test_rsqrt(int dt, double limit_ulp) {
  const int count = 1 << 20;
  const double eps = sizeof(T) == 4 ? FLT_EPSILON : DBL_EPSILON;
  const double lo = std::log2(4 * eps * eps), hi = std::log2(16.0 * 32 * 32);
  std::vector<T> x(count), r(count);
  for (int i = 0; i < count; ++i) x[i] = (T)(i % 2 ? uniform(0.5, 1) : std::exp2(uniform(lo, hi)));
  x[0] = (T)0.5, x[1] = (T)1, x[2] = (T)(4 * eps * eps);
  Dev dx(count * sizeof(T)), dr(count * sizeof(T));
  dx.put(x.data());
  rsqrt_kernel<T><<<(count + 255) / 256, 256>>>(dx.as<T>(), dr.as<T>(), count);
  CK(cudaGetLastError());
  dr.get(r.data());
  const int digits = std::numeric_limits<T>::digits;
  double worst = 0;
  T worst_x = 0;
  for (int i = 0; i < count; ++i) {
    const ld ref = 1 / std::sqrt((ld)x[i]);
    const double ulps =
        (double)(std::fabs((ld)r[i] - ref) / std::ldexp((ld)1, std::ilogb(ref) - digits + 1));
    if (!(ulps <= worst)) worst = ulps, worst_x = x[i];
  }
  record(fmt("jacobi rsqrt %s", dname(dt)), worst <= limit_ulp,
         fmt("%d arguments; max error %.3f ulp at %.17g (limit %.1f)", count, worst,
             (double)worst_x, limit_ulp));
}

/* gstat_cu_graded_check against the host's row maxima: batches of random
 * symmetric matrices (one triangle stored, the other poisoned), some rows
 * scaled by 10^k, a zero matrix beside them; flag 1 exactly when some
 * matrix's nonzero row maxima span more than the range. */
void test_graded_check() {
  int bad = 0, cases = 0;
  for (int upper = 0; upper < 2; upper++)
    for (int64_t n : {1, 40, 65, 1000})
      for (double scale : {1.0, 1e3, 1e6}) {
        const int64_t batch = 3;
        std::vector<float> a((size_t)(batch * n * n));
        double worst = 0;
        for (int64_t b = 0; b < batch; b++) {
          std::vector<double> d((size_t)n, 1.0);
          if (b == 1 && n > 1) d[(size_t)(n / 2)] = scale; /* one row and column graded */
          double lo = INFINITY, hi = 0;
          std::vector<double> top((size_t)n, 0.0);
          for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < n; i++) {
              const bool stored = upper ? i <= j : i >= j;
              float *x = &a[(size_t)(b * n * n + i + j * n)];
              if (!stored) {
                *x = NAN; /* never read */
                continue;
              }
              const double v = b == 2 ? 0.0 : uniform(0.5, 1) * d[(size_t)i] * d[(size_t)j];
              *x = (float)v;
              top[(size_t)i] = std::max(top[(size_t)i], std::fabs((double)*x));
              top[(size_t)j] = std::max(top[(size_t)j], std::fabs((double)*x));
            }
          for (double t : top) {
            if (t > 0) lo = std::min(lo, t);
            hi = std::max(hi, t);
          }
          if (hi > 0) worst = std::max(worst, hi / lo);
        }
        Dev da(a.size() * sizeof(float)), scratch((size_t)(16 * batch)), flag(sizeof(int));
        da.put(a.data());
        const double range = 1e5;
        CK(gstat_cu_graded_check(1, da.p, n, batch, upper, range, scratch.p, flag.as<int>(), 0));
        int got = -1;
        flag.get(&got);
        bad += got != (worst > range ? 1 : 0);
        cases++;
      }
  record("graded check", bad == 0, fmt("%d of %d batches flagged wrongly", bad, cases));
}

void test_bad_arguments() {
  int bad = 0;
  bad += gstat_cu_eigh_jacobi(1, nullptr, 0, 65, 1, nullptr, nullptr, nullptr, nullptr, 0) !=
         cudaErrorInvalidValue;
  bad += gstat_cu_eigh_jacobi(4, nullptr, 0, 4, 1, nullptr, nullptr, nullptr, nullptr, 0) !=
         cudaErrorInvalidValue;
  bad += gstat_cu_eigh_jacobi(1, nullptr, 0, 4, 0, nullptr, nullptr, nullptr, nullptr, 0) !=
         cudaSuccess;
  bad += gstat_cu_cholesky_small(2, nullptr, 65, 1, nullptr, 0) != cudaErrorInvalidValue;
  bad += gstat_cu_gather(nullptr, 1, 1, 2, 2, 4, 1, 2, nullptr, 3, 0) != cudaErrorInvalidValue;
  bad += gstat_cu_scatter(nullptr, 3, 1, 2, 2, nullptr, 1, 4, 1, 2, 0) != cudaErrorInvalidValue;
  bad +=
      gstat_cu_find_nonfinite(1, nullptr, 5, 1, 1, 1, 1, 1, 1, nullptr, 0) != cudaErrorInvalidValue;
  bad += gstat_cu_fix_signs(3, nullptr, 4, 1, 0) != cudaErrorInvalidValue;
  record("argument checks", bad == 0, fmt("%d wrong return codes", bad));
}

} /* namespace */

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77; /* ctest: SKIP_RETURN_CODE */
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount);

  test_bad_arguments();
  test_gather_scatter();
  test_find_nonfinite();
  test_graded_check();
  test_fix_signs<float>(1);
  test_fix_signs<double>(2);
  test_cholesky<float>(1);
  test_cholesky<double>(2);
  test_rsqrt<float>(1, 2.0);  /* measured 1.52 */
  test_rsqrt<double>(2, 1.5); /* measured 0.99 (the residual 1 - x r^2 is rounded) */
  test_jacobi<float>(1);
  test_jacobi<double>(2);
  test_jacobi_bf16();
  test_jacobi_flags();
  test_jacobi_nan_coupling();
  time_jacobi<float>(1, 32, 1024, 0.16);
  time_jacobi<double>(2, 32, 1024, 0);
  time_jacobi<float>(1, 16, 100000, 0);
  time_jacobi<double>(2, 16, 100000, 0);
  /* n = 64: XsyevBatched's times for these four are in bench/README.md,
   * "Measurements moved from code comments" */
  time_jacobi<float>(1, 64, 1000, 0);
  time_jacobi<double>(2, 64, 1000, 0);
  time_jacobi<float>(1, 64, 512, 0);
  time_jacobi<double>(2, 64, 512, 0);
  time_jacobi<float>(1, 48, 1000, 0);
  time_cholesky<float>(1, 32, 1024, 0.040);
  time_cholesky<double>(2, 32, 1024, 0);
  time_cholesky<float>(1, 64, 512, 0.076); /* target: potrfBatched's time (bench/README.md) */
  time_cholesky<double>(2, 64, 512, 0);
  CK(cudaDeviceSynchronize());

  int failed = 0;
  std::printf("\n%-40s %-6s %s\n", "check", "result", "detail");
  for (const Row &r : rows) {
    std::printf("%-40s %-6s %s\n", r.name.c_str(), r.pass ? "PASS" : "FAIL", r.detail.c_str());
    failed += !r.pass;
  }
  std::printf("\ntimings (best of 10, cudaEvent):\n");
  for (const std::string &t : timings) std::printf("  %s\n", t.c_str());
  std::printf("\n%s: %d of %d checks failed\n", failed ? "FAIL" : "PASS", failed, (int)rows.size());
  return failed ? 1 : 0;
}
