#!/usr/bin/env python3
"""PCA of data already on the GPU: gstat_pca (covariance method, fp32) against
torch's (X - mean)^T (X - mean) + torch.linalg.eigh on the same tensor, same run;
then the Gram method (wide shapes) against torch's (X - mean)(X - mean)^T +
eigh + X^T U, and the randomized method against the same range finder written
in torch (l = k + 10 vectors, 7 power iterations with QR, the small SVD).

gstat is called through ctypes on the tensor's device pointer (no copy). Times
are wall-clock around synchronized calls (gstat_pca returns host results, so
it synchronizes itself), best of REPS after one warm-up call each. The
accuracy column compares the top-k explained variances with a float64 torch
computation on the same data. The covariance method's scores column: "host"
is gstat_pca's own scores (the C API's result in host memory), "device" a fit
without them and gstat_pca_transform into a CUDA tensor (what
gstat.PCA.fit_transform of a CUDA tensor does; torch's scores stay on the
device too).

usage: bench/gpu_pca_vs_torch.py [--build build-gpu] [--reps 3] [--quick]
                                 [--methods cov,gram,randomized] [--trace [--top T] [--gaps US]]
                                 [--shapes NxP,...]

--trace: after each row, where one call's time goes (kernels, copies, host waits;
gpu_bench_common.trace), the T (default 5) largest device items; with --gaps,
the device's idle stretches of at least US microseconds in one call, with the
runtime calls made meanwhile (gpu_bench_common.trace_gaps).
--shapes: only these rows (of every method asked for).
"""
import argparse
import ctypes

import torch

from gpu_bench_common import Matrix, load, timed, trace


class PcaOptions(ctypes.Structure):
    _fields_ = [("n_components", ctypes.c_int64), ("variance_fraction", ctypes.c_double),
                ("center", ctypes.c_int), ("scale", ctypes.c_int), ("whiten", ctypes.c_int),
                ("method", ctypes.c_int), ("oversamples", ctypes.c_int64),
                ("power_iterations", ctypes.c_int64), ("seed", ctypes.c_uint64),
                ("compute_scores", ctypes.c_int)]


class PcaResult(ctypes.Structure):
    _fields_ = [("batch", ctypes.c_int64), ("n_samples", ctypes.c_int64),
                ("n_features", ctypes.c_int64), ("n_components", ctypes.c_int64),
                ("method", ctypes.c_int), ("whiten", ctypes.c_int)] + [
                    (name, ctypes.POINTER(ctypes.c_double)) for name in
                    ("components", "explained_variance", "explained_variance_ratio",
                     "singular_values", "mean", "scale", "noise_variance", "total_variance",
                     "scores")]


def torch_gram(x, k):
    xc = x - x.mean(0)
    w, u = torch.linalg.eigh(xc @ xc.T)
    v = xc.T @ u[:, -k:]
    return w, v / v.norm(dim=0)


def torch_randomized(x, k, power=7, over=10):
    xc = x - x.mean(0)
    g = torch.Generator(device=x.device).manual_seed(0)
    y = xc @ torch.randn(x.shape[1], k + over, device=x.device, dtype=x.dtype, generator=g)
    for _ in range(power):
        y = torch.linalg.qr(y).Q
        z = torch.linalg.qr(xc.T @ y).Q
        y = xc @ z
    q = torch.linalg.qr(y).Q
    _, s, vh = torch.linalg.svd(q.T @ xc, full_matrices=False)
    return s[:k] ** 2, vh[:k]


def method_rows(lib, ctx, method, shapes, k, reps, traced=False, top=5, gaps=0.0):
    """gstat's GRAM (2) or RANDOMIZED (3) method on device data vs torch, fp32,
    without scores; the accuracy column: top-k variances against float64."""
    rows = []
    for n, p in shapes:
        g = torch.Generator(device="cuda").manual_seed(0)
        scales = 1 + 10 * 0.7 ** torch.arange(p, device="cuda")
        x = (torch.randn(n, p, device="cuda", generator=g) * scales + 3.0).contiguous()
        m = Matrix(x.data_ptr(), 1, 1, torch.cuda.current_device(), 1, n, p, n * p, p, 1)
        opt = PcaOptions()
        lib.gstat_pca_options_init(ctypes.byref(opt))
        opt.n_components = k
        opt.compute_scores = 0
        opt.method = method
        opt.power_iterations = 7
        res = ctypes.POINTER(PcaResult)()

        def run_gstat():
            st = lib.gstat_pca(ctx, ctypes.byref(m), ctypes.byref(opt), ctypes.byref(res))
            assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
            return res

        fn = torch_gram if method == 2 else torch_randomized
        g_ms, r = timed(run_gstat, reps)
        t_ms, _ = timed(lambda: fn(x, k), reps)
        if traced:
            name = ('gram', 'randomized')[method - 2]
            trace(f"gstat {name} {n}x{p}", run_gstat, calls=5, top=top, gaps=gaps)
            trace(f"torch {name} {n}x{p}", lambda: fn(x, k), calls=5, top=top, gaps=gaps)
        ev = [r.contents.explained_variance[i] for i in range(k)]
        xd = x.double()
        xd -= xd.mean(0)
        ref = torch.linalg.eigvalsh(xd.T @ xd if n >= p else xd @ xd.T).flip(0)[:k] / (n - 1)
        err = max(abs(ev[i] - ref[i].item()) / ref[i].item() for i in range(k))
        lib.gstat_pca_result_free(res)
        del x, xd
        torch.cuda.empty_cache()
        rows.append((n, p, g_ms, t_ms, err))
        print(f"{'gram' if method == 2 else 'randomized'} {n}x{p}: gstat {g_ms:.2f} ms, "
              f"torch {t_ms:.2f} ms", flush=True)
    return rows


def print_method_table(name, rows, k, reps):
    print(f"\nPCA ({name}) on the device, fp32, k={k}, no scores ({torch.cuda.get_device_name()}; "
          f"best of {reps}, ms)")
    print("| n x p | gstat | torch | torch/gstat | rel. err. gstat |")
    print("|---|---:|---:|---:|---:|")
    for n, p, g_ms, t_ms, e in rows:
        print(f"| {n}x{p} | {g_ms:.2f} | {t_ms:.2f} | {t_ms / g_ms:.2f} | {e:.1e} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build-gpu")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--methods", default="cov,gram,randomized")
    ap.add_argument("--trace", action="store_true", help="where each row's call spends its time")
    ap.add_argument("--top", type=int, default=5, help="device items listed per trace")
    ap.add_argument("--gaps", type=float, default=0.0,
                    help="with --trace: list the device's idle stretches of at least this many us")
    ap.add_argument("--shapes", default="", help="only these rows, e.g. 20000x1000,2000x20000")
    args = ap.parse_args()
    methods = args.methods.split(",")
    only = {tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",") if s}

    def chosen(shapes):
        return [sh for sh in shapes if not only or sh in only]

    lib, ctx = load(args.build)
    tables = []  # printed last, after the covariance table's rows
    if "gram" in methods:
        wide = [(2000, 20000), (5000, 50000)] if not args.quick else [(2000, 20000)]
        tables.append(("Gram", method_rows(lib, ctx, 2, chosen(wide), 10, args.reps, args.trace,
                                           args.top, args.gaps)))
    if "randomized" in methods:
        tall = [(100000, 100), (20000, 1000), (1000000, 1000)]
        if args.quick:
            tall = [(100000, 100), (200000, 1000)]
        tables.append(("randomized", method_rows(lib, ctx, 3, chosen(tall), 10, args.reps,
                                                 args.trace, args.top, args.gaps)))
    if "cov" not in methods:
        for name, rows in tables:
            print_method_table(name, rows, 10, args.reps)
        lib.gstat_ctx_destroy(ctx)
        return
    shapes = [(100000, 100), (20000, 1000), (1000000, 1000)]
    if args.quick:
        shapes = [(100000, 100), (200000, 1000)]
    k = 10
    rows = []
    for n, p in chosen(shapes):
        g = torch.Generator(device="cuda").manual_seed(0)
        mix = torch.randn(p, p, device="cuda", generator=g) / p ** 0.5
        x = (torch.randn(n, p, device="cuda", generator=g) @ mix + 3.0).contiguous()
        m = Matrix(x.data_ptr(), 1, 1, torch.cuda.current_device(), 1, n, p, n * p, p, 1)
        # scores: 0 none, 1 in the result (host memory, the C API's), 2 projected into a
        # device tensor by gstat_pca_transform (what gstat.PCA.fit_transform does with a
        # CUDA tensor)
        z = torch.empty(n, k, device="cuda", dtype=torch.float32)
        zm = Matrix(z.data_ptr(), 1, 1, torch.cuda.current_device(), 1, n, k, n * k, k, 1)
        for scores in (0, 1, 2):
            opt = PcaOptions()
            lib.gstat_pca_options_init(ctypes.byref(opt))
            opt.n_components = k
            opt.compute_scores = scores == 1
            res = ctypes.POINTER(PcaResult)()

            def run_gstat():
                st = lib.gstat_pca(ctx, ctypes.byref(m), ctypes.byref(opt), ctypes.byref(res))
                assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
                if scores == 2:
                    st = lib.gstat_pca_transform(ctx, res, ctypes.byref(m), ctypes.byref(zm))
                    assert st == 0, lib.gstat_ctx_last_error(ctx).decode()
                return res

            def run_torch():
                xc = x - x.mean(0)
                w, v = torch.linalg.eigh(xc.T @ xc)
                if scores:
                    return w, xc @ v[:, -k:]
                return w, None

            g_ms, r = timed(run_gstat, args.reps)
            t_ms, (w, _) = timed(run_torch, args.reps)
            ev = [r.contents.explained_variance[i] for i in range(k)]
            xd = x.double()
            xcd = xd - xd.mean(0)
            ref = torch.linalg.eigvalsh(xcd.T @ xcd).flip(0)[:k] / (n - 1)
            del xd, xcd
            err_g = max(abs(ev[i] - ref[i].item()) / ref[i].item() for i in range(k))
            err_t = max(abs(w.flip(0)[i].item() / (n - 1) - ref[i].item()) / ref[i].item()
                        for i in range(k))
            rows.append((n, p, scores, g_ms, t_ms, err_g, err_t))
            print(f"{n}x{p} scores={scores}: gstat {g_ms:.2f} ms, torch {t_ms:.2f} ms", flush=True)
            if args.trace:
                for who, call in (("gstat", run_gstat), ("torch", run_torch)):
                    trace(f"{who} PCA {n}x{p} scores={scores}", call, top=args.top,
                          gaps=args.gaps)
            lib.gstat_pca_result_free(res)
        del x, mix, z
        torch.cuda.empty_cache()
    lib.gstat_ctx_destroy(ctx)
    print(f"\nPCA on the device, fp32, k={k} ({torch.cuda.get_device_name()}, torch {torch.__version__}; "
          f"best of {args.reps}, ms)")
    print("| n x p | scores | gstat | torch cov+eigh | torch/gstat | rel. err. gstat | rel. err. torch |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for n, p, sc, g_ms, t_ms, eg, et in rows:
        print(f"| {n}x{p} | {('no', 'host', 'device')[sc]} | {g_ms:.2f} | {t_ms:.2f} | {t_ms / g_ms:.2f} | "
              f"{eg:.1e} | {et:.1e} |")
    for name, rows in tables:
        print_method_table(name, rows, 10, args.reps)


if __name__ == "__main__":
    main()
