/*
 * Column statistics, centring and scaling of dense column-major host buffers
 * (backend/dense.h): the building blocks of the CPU's weighted co-moment and
 * of the statistics' host paths (PCA's Gram and randomized methods).
 */
#include <math.h>
#include <stdbool.h>

#include "backend/dense.h"

/* sum of (c[i] - shift) in double, vectorized (the order of a mean's terms
 * does not matter at this precision; the second pass corrects the first) */
static double shifted_sum_f64(const double *c, int64_t n, double shift) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; i++) s += c[i] - shift;
  return s;
}

static double shifted_sum_f32(const float *c, int64_t n, double shift) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; i++) s += (double)c[i] - shift;
  return s;
}

#define DEFINE_DATA_OPS(T, SFX)                                                               \
  static void col_means_##SFX(int64_t n, int64_t p, const T *x, const double *w, double wsum, \
                              double *mean) {                                                 \
    for (int64_t j = 0; j < p; j++) {                                                         \
      const T *c = x + j * n;                                                                 \
      double s = 0, r = 0;                                                                    \
      if (w) {                                                                                \
        for (int64_t i = 0; i < n; i++) s += w[i] * (double)c[i];                             \
        double m = s / wsum;                                                                  \
        for (int64_t i = 0; i < n; i++) r += w[i] * ((double)c[i] - m);                       \
        mean[j] = m + r / wsum;                                                               \
      } else {                                                                                \
        s = shifted_sum_##SFX(c, n, 0.0);                                                     \
        double m = s / (double)n;                                                             \
        r = shifted_sum_##SFX(c, n, m);                                                       \
        mean[j] = m + r / (double)n;                                                          \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  static void col_sd_##SFX(int64_t n, int64_t p, const T *x, double *sd) {                    \
    for (int64_t j = 0; j < p; j++) {                                                         \
      const T *c = x + j * n;                                                                 \
      double s = 0;                                                                           \
      for (int64_t i = 0; i < n; i++) s += (double)c[i] * (double)c[i];                       \
      sd[j] = n > 1 ? sqrt(s / (double)(n - 1)) : NAN;                                        \
    }                                                                                         \
  }                                                                                           \
  static void center_scale_##SFX(int64_t n, int64_t p, T *x, const double *mean,              \
                                 const double *scale) {                                       \
    for (int64_t j = 0; j < p; j++) {                                                         \
      T *c = x + j * n;                                                                       \
      double m = mean ? mean[j] : 0.0;                                                        \
      double f = scale ? 1.0 / scale[j] : 1.0;                                                \
      for (int64_t i = 0; i < n; i++) c[i] = (T)(((double)c[i] - m) * f);                     \
    }                                                                                         \
  }                                                                                           \
  static void scale_rows_##SFX(int64_t n, int64_t p, T *x, const double *f) {                 \
    for (int64_t j = 0; j < p; j++)                                                           \
      for (int64_t i = 0; i < n; i++) x[i + j * n] = (T)((double)x[i + j * n] * f[i]);        \
  }

DEFINE_DATA_OPS(float, f32)
DEFINE_DATA_OPS(double, f64)

void gstat_i_col_means(gstat_dtype ct, int64_t n, int64_t p, const void *buf, const double *w,
                       double wsum, double *mean) {
  if (ct == GSTAT_F64)
    col_means_f64(n, p, buf, w, wsum, mean);
  else
    col_means_f32(n, p, buf, w, wsum, mean);
}

void gstat_i_col_sd(gstat_dtype ct, int64_t n, int64_t p, const void *buf, double *sd) {
  if (ct == GSTAT_F64)
    col_sd_f64(n, p, buf, sd);
  else
    col_sd_f32(n, p, buf, sd);
}

void gstat_i_center_scale(gstat_dtype ct, int64_t n, int64_t p, void *buf, const double *mean,
                          const double *scale) {
  if (ct == GSTAT_F64)
    center_scale_f64(n, p, buf, mean, scale);
  else
    center_scale_f32(n, p, buf, mean, scale);
}

void gstat_i_scale_rows(gstat_dtype ct, int64_t n, int64_t p, void *buf, const double *f) {
  if (ct == GSTAT_F64)
    scale_rows_f64(n, p, buf, f);
  else
    scale_rows_f32(n, p, buf, f);
}

void gstat_i_exact_constant_means(gstat_dtype ct, int64_t n, int64_t p, const void *buf,
                                  double *mean) {
  for (int64_t j = 0; j < p && n > 0; j++) {
    bool same = true;
    if (ct == GSTAT_F64) {
      const double *c = (const double *)buf + j * n;
      for (int64_t i = 1; i < n && same; i++) same = c[i] == c[0];
      if (same && !isnan(c[0])) mean[j] = c[0];
    } else {
      const float *c = (const float *)buf + j * n;
      for (int64_t i = 1; i < n && same; i++) same = c[i] == c[0];
      if (same && !isnan(c[0])) mean[j] = (double)c[0];
    }
  }
}
