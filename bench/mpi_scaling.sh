#!/usr/bin/env bash
# Strong and weak scaling of gstat_mpi: bench_mpi under mpirun with 1, 2, 4
# and 8 ranks (one thread each, bound to cores) for distributed PCA and batch
# spectral clustering, and with 1 and 2 ranks on GPUs (one rank per GPU) when
# GPUS > 0. Prints a Markdown table; efficiency = T1 / (ranks * T) for strong
# scaling (fixed total size) and T1 / T for weak scaling (fixed size per rank).
#
#   bench/mpi_scaling.sh BUILD_DIR [PCA_ROWS P] [GRAPHS NODES K] [GPUS]
#
# Defaults: 10^7 x 256 float64 rows (strong; 1.25e6 per rank weak), 8000
# graphs of 64 nodes with 3 clusters (strong; 1000 per rank weak), GPUS from
# nvidia-smi. CPU_RANKS="" skips the CPU runs (default "1 2 4 8"). GPU runs
# also check their explained variances against the CPU backend's.
set -euo pipefail
bin="$1/bench/bench_mpi"
rows=${2:-10000000} p=${3:-256} graphs=${4:-8000} nodes=${5:-64} k=${6:-3}
gpus=${7:-$(nvidia-smi -L 2>/dev/null | wc -l || echo 0)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1 \
  OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive NCCL_NVLS_ENABLE=0
run() { mpirun -np "$1" --bind-to core --map-by core "$bin" "${@:2}"; }

results=()
for np in ${CPU_RANKS-1 2 4 8}; do
  results+=("$(run $np pca "$rows" "$p")")
  results+=("$(run $np pca $((rows / 8)) "$p" --weak)")
  results+=("$(run $np spectral "$graphs" "$nodes" "$k")")
  results+=("$(run $np spectral $((graphs / 8)) "$nodes" "$k" --weak)")
done
if [ "$gpus" -gt 0 ]; then
  for np in 1 2; do
    [ "$np" -le "$gpus" ] || continue
    results+=("$(mpirun -np $np "$bin" pca "$rows" "$p" --gpu --reps 5)")
    results+=("$(mpirun -np $np "$bin" pca $((rows / 2)) "$p" --gpu --weak --reps 5)")
  done
fi
printf '%s\n' "${results[@]}" | awk '
  { delete v
    for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    key = v["op"] " " v["mode"] " " v["location"]
    if (!(key in count)) order[++nkeys] = key
    t = v["best_ms"] + 0
    if (v["ranks"] == 1) t1[key] = t
    eff = (v["mode"] == "strong") ? t1[key] / (v["ranks"] * t) : t1[key] / t
    check = ("ev_vs_cpu" in v) ? "ev vs CPU backend " v["ev_vs_cpu"] : ""
    rows[key, ++count[key]] = sprintf("| %s | %s | %s | %s | %d | %.1f | %.2f | %.0f%% | %s |",
      v["op"], v["mode"], v["location"], v["size"], v["ranks"], t, t1[key] / t, 100 * eff, check) }
  END { print "| op | scaling | where | total size | ranks | best ms | speed-up | efficiency | check |"
        print "|---|---|---|---|---:|---:|---:|---:|---|"
        for (k = 1; k <= nkeys; k++) for (i = 1; i <= count[order[k]]; i++) print rows[order[k], i] }'
