# Sourced by scripts/pending-check-*: the device checks of the gpu-pending2
# branches (issue 30 items 1-2, issue 32) on the GPU machine. Builds like
# scripts/gpu-check (scripts/gpu-build into build-gpu; .device/ from
# scripts/prepare-device, carried); every check appends a line to
# results.txt, which pc_table prints last.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Logs go to PC_LOGS (gpu-build and python-gpu-check write theirs there
# too); the caller's $OUT gets results.txt (line by line, so a call cut
# short by its time limit still brings it back) and, at the end,
# pending-logs.tgz: a device call brings back at most 8 files.
PC_LOGS=${PC_LOGS:-/tmp/gstat-pending-logs}
[ -n "${PC_NESTED:-}" ] || export PC_OUT=${OUT:-/tmp/gstat-gpu-out}
export OUT=$PC_LOGS
mkdir -p "$OUT" "$PC_OUT"
export LD_LIBRARY_PATH="$PWD/.device/lib:${LD_LIBRARY_PATH:-}"
PC_RESULTS="$PC_OUT/results.txt"
PC_STAGE=${*:-all}
for st in $PC_STAGE; do
  case "$st" in build | test | bench | all) ;;
    *) echo "usage: $0 [build|test|bench|all]... (each stage builds first: a no-op when built)" >&2; exit 2 ;;
  esac
done

# a nested call (scripts/pending-check-all) appends to the caller's table
[ -n "${PC_NESTED:-}" ] || : >"$PC_RESULTS"

pc_note() { printf '%-34s %s\n' "$1" "$2" >>"$PC_RESULTS"; }
pc_want() { case " $PC_STAGE " in *" all "* | *" $1 "*) return 0 ;; esac; return 1; }
pc_table() {
  [ -z "${PC_NESTED:-}" ] || return 0
  echo
  echo "== results ($(basename "$0") $PC_STAGE)"
  cat "$PC_RESULTS"
  tar czf "$PC_OUT/pending-logs.tgz" -C "$PC_LOGS" . 2>/dev/null
}

# scripts/gpu-build (a no-op when build-gpu is up to date); stops the script on failure
pc_build() {
  [ -z "${PC_NESTED:-}" ] || return 0 # pending-check-all built
  [ -e .device/lib/libcmocka.so.0 ] || { echo "no .device/: run scripts/prepare-device here and carry .device"; exit 1; }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  local t=$SECONDS
  if scripts/gpu-build; then pc_note build "ok ($((SECONDS - t)) s)"; else pc_note build FAILED; pc_table; exit 1; fi
}

# ctest of the tests matching $1 (log $OUT/$2.log): a result line per test
pc_ctest() {
  ctest --test-dir build-gpu --output-on-failure -R "$1" 2>&1 | tee "$OUT/$2.log" | tail -12
  sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.* *\**([A-Za-z]+).* ([0-9.]+ sec)$/\1 \2 \3/p' "$OUT/$2.log" |
    while read -r name res secs unit; do pc_note "ctest $name" "$res $secs $unit"; done
}

# test_families on the CUDA backend (GSTAT_FAMILIES_LONG=1: the 640 x 512 mixed batch too):
# a line per family with its worst ratios, time and paths
pc_families() {
  GSTAT_FAMILIES_LONG=${GSTAT_FAMILIES_LONG:-1} build-gpu/tests/test_families cuda 2>&1 |
    tee "$OUT/families_cuda.log" | grep -E '^# families|^FAIL|PASSED|FAILED|SKIPPED'
  pc_note "families cuda" "$(grep -cE '^FAIL' "$OUT/families_cuda.log") FAIL lines, $(grep -oE 'PASSED|FAILED' "$OUT/families_cuda.log" | tail -1)"
}

# the solver fuzzer's residual checks on the CUDA backend (corpus + PC_FUZZ_SECONDS)
pc_fuzz() {
  GSTAT_CUDA_MODULE="$PWD/build-gpu/libgstat_cuda.so.0" GSTAT_FUZZ_BACKEND=cuda \
    build-gpu/tests/fuzz/fuzz_solvers tests/fuzz/corpus/solvers -seconds="${PC_FUZZ_SECONDS:-45}" \
    -seed="$RANDOM" >"$OUT/fuzz_solvers_cuda.log" 2>&1
  local rc=$?
  tail -3 "$OUT/fuzz_solvers_cuda.log"
  pc_note "fuzz_solvers cuda" "rc $rc"
}

# a Python benchmark under build-gpu's libraries; its last $2 lines go to the results
pc_pybench() {
  local name=$1 keep=$2
  shift 2
  PYTHONUNBUFFERED=1 python3 "$@" 2>&1 | tee "$OUT/$name.log" | grep -v '^#'
  pc_note "$name" "rc ${PIPESTATUS[0]}, table:"
  tail -n "$keep" "$OUT/$name.log" | sed 's/^/    /' >>"$PC_RESULTS"
}

# the Python extension (scripts/python-gpu-check: build, install into
# /tmp/gstat-pyinst) and its GPU tests, test_gpu.py and test_torch_ops.py
pc_pytest() {
  scripts/python-gpu-check "$@" 2>&1 | tee "$OUT/pytest-gpu.log" | tail -8
  pc_note "pytest test_gpu, test_torch_ops" "$(tail -1 "$OUT/pytest-gpu.log")"
}

# the installed extension for a benchmark (built again only when missing)
pc_pyinst() {
  [ -d /tmp/gstat-pyinst/gstat ] || scripts/python-gpu-check --collect-only -q >/dev/null 2>&1 ||
    pc_note "python build" FAILED
  export PYTHONPATH=/tmp/gstat-pyinst
}
