# Sourced by scripts/gpu-stages-*: the GPU checks and benchmarks of issue
# 30 (eigh on hard spectra, Cholesky) and issue 32 (gstat.torch), stage by
# stage on the GPU machine. Builds like scripts/gpu-check (scripts/gpu-build
# into build-gpu; .device/ from scripts/prepare-device, carried); every check
# appends a line to results.txt, which gs_table prints last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Logs go to GS_LOGS (gpu-build and python-gpu-check write theirs there
# too); the caller's $OUT gets results.txt (line by line, so a call cut
# short by its time limit still brings it back) and, at the end,
# stage-logs.tgz: a device call brings back at most 8 files.
GS_LOGS=${GS_LOGS:-/tmp/gstat-stage-logs}
[ -n "${GS_NESTED:-}" ] || export GS_OUT=${OUT:-/tmp/gstat-gpu-out}
export OUT=$GS_LOGS
mkdir -p "$OUT" "$GS_OUT"
export LD_LIBRARY_PATH="$PWD/.device/lib:${LD_LIBRARY_PATH:-}"
GS_RESULTS="$GS_OUT/results.txt"
GS_STAGE=${*:-all}
for st in $GS_STAGE; do
  case "$st" in build | test | bench | all) ;;
    *) echo "usage: $0 [build|test|bench|all]... (each stage builds first: a no-op when built)" >&2; exit 2 ;;
  esac
done

# a nested call (scripts/gpu-stages-all) appends to the caller's table
[ -n "${GS_NESTED:-}" ] || : >"$GS_RESULTS"

gs_note() { printf '%-34s %s\n' "$1" "$2" >>"$GS_RESULTS"; }
gs_want() { case " $GS_STAGE " in *" all "* | *" $1 "*) return 0 ;; esac; return 1; }
gs_table() {
  [ -z "${GS_NESTED:-}" ] || return 0
  echo
  echo "== results ($(basename "$0") $GS_STAGE)"
  cat "$GS_RESULTS"
  tar czf "$GS_OUT/stage-logs.tgz" -C "$GS_LOGS" . 2>/dev/null
}

# scripts/gpu-build (a no-op when build-gpu is up to date); stops the script on failure
gs_build() {
  [ -z "${GS_NESTED:-}" ] || return 0 # gpu-stages-all built
  [ -e .device/lib/libcmocka.so.0 ] || { echo "no .device/: run scripts/prepare-device here and carry .device"; exit 1; }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  local t=$SECONDS
  if scripts/gpu-build; then gs_note build "ok ($((SECONDS - t)) s)"; else gs_note build FAILED; gs_table; exit 1; fi
}

# ctest of the tests matching $1 (log $OUT/$2.log): a result line per test
gs_ctest() {
  ctest --test-dir build-gpu --output-on-failure -R "$1" 2>&1 | tee "$OUT/$2.log" | tail -12
  sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.* *\**([A-Za-z]+).* ([0-9.]+ sec)$/\1 \2 \3/p' "$OUT/$2.log" |
    while read -r name res secs unit; do gs_note "ctest $name" "$res $secs $unit"; done
}

# test_families on the CUDA backend (GSTAT_FAMILIES_LONG=1: the 640 x 512 mixed batch too):
# a line per family with its worst ratios, time and paths
gs_families() {
  GSTAT_FAMILIES_LONG=${GSTAT_FAMILIES_LONG:-1} build-gpu/tests/test_families cuda 2>&1 |
    tee "$OUT/families_cuda.log" | grep -E '^# families|^FAIL|PASSED|FAILED|SKIPPED'
  gs_note "families cuda" "$(grep -cE '^FAIL' "$OUT/families_cuda.log") FAIL lines, $(grep -oE 'PASSED|FAILED' "$OUT/families_cuda.log" | tail -1)"
}

# the solver fuzzer's residual checks on the CUDA backend (corpus + GS_FUZZ_SECONDS)
gs_fuzz() {
  GSTAT_CUDA_MODULE="$PWD/build-gpu/libgstat_cuda.so.0" GSTAT_FUZZ_BACKEND=cuda \
    build-gpu/tests/fuzz/fuzz_solvers tests/fuzz/corpus/solvers -seconds="${GS_FUZZ_SECONDS:-45}" \
    -seed="$RANDOM" >"$OUT/fuzz_solvers_cuda.log" 2>&1
  local rc=$?
  tail -3 "$OUT/fuzz_solvers_cuda.log"
  gs_note "fuzz_solvers cuda" "rc $rc"
}

# a Python benchmark under build-gpu's libraries; its last $2 lines go to the results
gs_pybench() {
  local name=$1 keep=$2
  shift 2
  PYTHONUNBUFFERED=1 python3 "$@" 2>&1 | tee "$OUT/$name.log" | grep -v '^#'
  gs_note "$name" "rc ${PIPESTATUS[0]}, table:"
  tail -n "$keep" "$OUT/$name.log" | sed 's/^/    /' >>"$GS_RESULTS"
}

# the Python extension (scripts/python-gpu-check: build, install into
# /tmp/gstat-pyinst) and its GPU tests, test_gpu.py and test_torch_ops.py
gs_pytest() {
  scripts/python-gpu-check "$@" 2>&1 | tee "$OUT/pytest-gpu.log" | tail -8
  gs_note "pytest test_gpu, test_torch_ops" "$(tail -1 "$OUT/pytest-gpu.log")"
}

# the installed extension for a benchmark (built again only when missing)
gs_pyinst() {
  [ -d /tmp/gstat-pyinst/gstat ] || scripts/python-gpu-check --collect-only -q >/dev/null 2>&1 ||
    gs_note "python build" FAILED
  export PYTHONPATH=/tmp/gstat-pyinst
}
