#!/usr/bin/env bash
# The prepared GPU check, run on the GPU machine: install the carried wheels, print the GPU and the
# versions, run the GPU tests, run the paired suites at sizes that fill the chip, and leave every
# log and result under $OUT.
#
#   benchmarks/gpu_check.sh [PHASE ...]      (default: all)
#
# Phases, in the order "all" runs them:
#   install    pip-install every wheel under .whl/*/ into $SITE (parts NAME.whl.00, .01, ... spread
#              over several folders are joined first; an incomplete one is reported and skipped)
#   info       nvidia-smi, "${ACCEL[@]}" info (GPU, driver, library versions, which arms can run)
#   tests      pytest -m gpu on tests/test_*_gpu.py (PYTEST_FILES: others; PYTEST_EXCLUDE: files or test ids
#              left out, those an earlier step ran), one JUnit XML per step among the results
#   groupby    "${ACCEL[@]}" data groupby $GROUPBY_ROWS $GROUPBY_K, then "${ACCEL[@]}" bench groupby on both arms
#              and every engine there is; GROUPBY_ARMS=data|cpu|engines|gpu splits it over calls (see phase_groupby)
#   join       "${ACCEL[@]}" data join $JOIN_ROWS, then "${ACCEL[@]}" bench join on both arms
#   models     "${ACCEL[@]}" bench models at $MODEL_ROWS rows, and XGBoost alone at $XGB_ROWS rows
#   crossover  "${ACCEL[@]}" bench crossover up to $CROSSOVER_MAX rows
#   flights    accel run flights: the paired GPU/CPU run (float32, then float16) with its run records
#   memory     benchmarks/bench_memory.py --device gpu (streaming over 10x a $MEMORY_BUDGET budget,
#              chunked vs whole throughput, fp16 vs fp32) and bench_rmm_pool.py (pool vs no pool)
#   dask       benchmarks/bench_dask_overhead.py --cluster local-cuda (1 Dask-CUDA worker vs one process)
#   hpo        accel hpo flights on the GPU arm ($HPO_TRIALS trials)
#   report     "${ACCEL[@]}" report over the results: $OUT/report.html
#
# On the CPU machine, before the calls to the GPU machine (see benchmarks/gpu_plan.py):
#   gpu_check.sh build-info    write accel/_build_info.json (the commit and tree the copy reports)
#   gpu_check.sh fetch         download the lock's wheels into .whl/<track>-NN/, one folder per call
#   gpu_check.sh plan          the calls, as JSON lines: what each carries and runs
# Every bench step appends each finished question/model to $OUT/results/progress-*.jsonl as it goes;
# a step that ends well removes its progress file (its result holds the same), so what comes back
# from one call to the GPU machine stays within 8 files, and a step cut short leaves what it finished.
# Each step's raw log is kept apart as well, and as each step ends the results so far and the logs
# of every step ended are packed into this invocation's archive ($OUT/results.tgz, or results-N.tgz
# for a later invocation in the same call): a call cut short still brings back every step it ended.
#
# Environment (defaults in brackets):
#   OUT [./gpu-check-out]  logs ($OUT/log), results ($OUT/results/*.json), the report
#   DRY_RUN [0]            1: the CPU-only parts at tiny sizes ("all" skips install; no nvidia-smi, no
#                          pytest, no XGBoost run; --device auto, so the GPU arm is recorded as
#                          skipped): what CI can test
#   PYTHON [python3]  SITE [/tmp/site]  WHEELS [.whl]  DATA [/tmp/accel-data]
#   GROUPBY_ROWS [1e8] GROUPBY_K [1e2] JOIN_ROWS [1e7] MODEL_ROWS [1e6] XGB_ROWS [1e7; 0 leaves it out]
#   MODELS [auto: all pairs when cuML is installed, else xgboost]
#   CROSSOVER_MAX [1e7] CROSSOVER_OPS [groupby,join,xgboost]
#   REPEATS [3 timed runs after the cold one]  STEP_TIMEOUT [540 s per step]  KEEP [/tmp/accel-keep]
#   GROUPBY_ARMS [both] GROUPBY_QUESTIONS [all] HPO_TRIALS [20]
#   FLIGHTS_ROWS [all]  MEMORY_BUDGET [4GB]  DASK_SCALE [10]  DASK_TABLE_ROWS [1e6]  DASK_DEVICE_LIMIT [200MB]
#
# Rough cost on an H200 host (16 cores): install 1-2 min for cuDF; groupby at 1e8 rows: data 1 min,
# the pandas arm several minutes (q10 and q3 dominate); models at 1e6 (all pairs) 3-5 min on the
# CPU arm. Run the phases in separate calls to the GPU machine when one call cannot hold them all, e.g.
#   set -o pipefail; bash benchmarks/gpu_check.sh install info tests groupby
#   set -o pipefail; bash benchmarks/gpu_check.sh models crossover report
# Every phase appends to $OUT/log and writes results under $OUT/results (8 files at most come back).
set -uo pipefail
cd "$(dirname "$0")/.."

# Every setting below that came from the environment is an override: the records list them
# (accel.environment.environment_overrides reads ACCEL_GPU_CHECK_OVERRIDES) and so does the log.
CHECK_SETTINGS=(OUT DRY_RUN PYTHON SITE WHEELS DATA KEEP GROUPBY_ROWS GROUPBY_K GROUPBY_ARMS GROUPBY_QUESTIONS JOIN_ROWS
                MODEL_ROWS XGB_ROWS MODELS CROSSOVER_MAX CROSSOVER_OPS REPEATS STEP_TIMEOUT FLIGHTS_ROWS MEMORY_BUDGET
                DASK_SCALE DASK_TABLE_ROWS DASK_DEVICE_LIMIT HPO_TRIALS JOIN_ARMS PYTEST_FILES PYTEST_EXCLUDE)
overrides=()
for name in "${CHECK_SETTINGS[@]}"; do
  [ -n "${!name+x}" ] && overrides+=("$name=${!name}")
done
export ACCEL_GPU_CHECK_OVERRIDES="${overrides[*]:-}"

OUT=${OUT:-$PWD/gpu-check-out}
DRY_RUN=${DRY_RUN:-0}
PY=${PYTHON:-python3}
SITE=${SITE:-/tmp/site}
WHEELS=${WHEELS:-.whl}
DATA=${DATA:-/tmp/accel-data}
KEEP=${KEEP:-/tmp/accel-keep}
if [ "$DRY_RUN" = 1 ]; then
  GROUPBY_ROWS=${GROUPBY_ROWS:-2e3}; GROUPBY_K=${GROUPBY_K:-10}; JOIN_ROWS=${JOIN_ROWS:-2e3}
  MODEL_ROWS=${MODEL_ROWS:-300}; XGB_ROWS=${XGB_ROWS:-0}; MODELS=${MODELS:-ridge,pca}
  CROSSOVER_MAX=${CROSSOVER_MAX:-1e4}; CROSSOVER_OPS=${CROSSOVER_OPS:-groupby}; DEVICE=auto
else
  GROUPBY_ROWS=${GROUPBY_ROWS:-1e8}; GROUPBY_K=${GROUPBY_K:-1e2}; JOIN_ROWS=${JOIN_ROWS:-1e7}
  MODEL_ROWS=${MODEL_ROWS:-1e6}; XGB_ROWS=${XGB_ROWS:-1e7}; MODELS=${MODELS:-auto}
  CROSSOVER_MAX=${CROSSOVER_MAX:-1e7}; CROSSOVER_OPS=${CROSSOVER_OPS:-groupby,join,xgboost}; DEVICE=gpu
fi
REPEATS=${REPEATS:-3}
STEP_TIMEOUT=${STEP_TIMEOUT:-540}
RESULTS="$OUT/results"

# Commands for the CPU machine, before any call to the GPU machine (nothing under $OUT, no log):
case "${1:-}" in
  build-info)  # what the copied tree (no .git there) reports as the code that ran
    exec "$PY" -c "from accel.environment import write_build_info as w; i = w(); g = i['git']
print(f\"accel/_build_info.json: {g['sha']} dirty={g['dirty']} ({len(i['files'])} files, digest {i['tree_digest'][:12]})\")" ;;
  plan) shift; exec "$PY" benchmarks/gpu_plan.py plan "$@" ;;
  fetch) shift; exec "$PY" benchmarks/gpu_plan.py fetch "$@" ;;
esac
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$RESULTS" "$DATA"
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

FAILED=()
STEPS=0
STEP_LOGS=$(mktemp -d "${TMPDIR:-/tmp}/accel-gpu-check.XXXXXX")/steps  # each step's raw log, packed with the results
ARCHIVE=""  # this invocation's archive under $OUT (chosen in main; none in a dry run)
step() {  # step NAME COMMAND...: run with a time limit, record failure, keep its log, pack what it left, carry on
  local name=$1; shift
  STEPS=$((STEPS + 1))
  mkdir -p "$STEP_LOGS"
  local log
  log="$STEP_LOGS/$(printf '%02d' "$STEPS")-$name.log"
  echo "== $name: $*" | tee "$log"
  local start=$SECONDS
  timeout "$STEP_TIMEOUT" "$@" 2>&1 | tee -a "$log"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$log"
  [ "$rc" -eq 0 ] || FAILED+=("$name (exit $rc)")
  LAST_RC=$rc
  pack
  return 0
}
pack() {  # the results so far and the logs of the steps ended, into this invocation's archive (replaced whole)
  [ -n "$ARCHIVE" ] && [ -d "$RESULTS" ] || return 0
  tar czf "$ARCHIVE.part" -C "$OUT" results -C "$(dirname "$STEP_LOGS")" steps && mv -f "$ARCHIVE.part" "$ARCHIVE"
}
progress_done() {  # progress_done FILE: the last step ended well, so its result file holds every line of FILE
  [ "${LAST_RC:-1}" -eq 0 ] && rm -f "$1"
  return 0
}
ACCEL=("$PY" -m accel)

phase_install() {
  shopt -s nullglob
  local wheels=() part base joined
  mkdir -p "$SITE/.joined" "$SITE/.installed"
  for part in "$WHEELS"/*/*.whl.00; do
    base=$(basename "${part%.00}")
    joined=$SITE/.joined/$base
    # Parts may sit in different folders (one per call): join them in suffix order.
    ls "$WHEELS"/*/"$base".[0-9][0-9] | awk -F. '{print $NF" "$0}' | sort -n | cut -d' ' -f2- | xargs cat > "$joined"
    if "$PY" -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).testzip()" "$joined" 2>/dev/null; then
      wheels+=("$joined")
    else
      echo "incomplete wheel $base ($(ls "$WHEELS"/*/"$base".[0-9][0-9] | wc -l) parts here): skipped until all parts are carried"
      rm -f "$joined"
    fi
  done
  wheels+=("$WHEELS"/*/*.whl)
  local todo=()
  for w in "${wheels[@]}"; do
    [ -e "$SITE/.installed/$(basename "$w")" ] || todo+=("$w")
  done
  if [ "${#todo[@]}" -eq 0 ]; then echo "no new wheels to install (${#wheels[@]} already in $SITE)"; return; fi
  echo "== install: ${#todo[@]} wheels into $SITE"
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${todo[@]}"; then
    for w in "${todo[@]}"; do touch "$SITE/.installed/$(basename "$w")"; done
    printf '  installed %s\n' "${todo[@]##*/}"
  else
    FAILED+=("install (pip)")
  fi
}

phase_info() {
  if [ "$DRY_RUN" = 1 ]; then echo "dry run: no nvidia-smi"; else step nvidia-smi nvidia-smi; fi
  step accel-info "${ACCEL[@]}" info
}

phase_tests() {
  if [ "$DRY_RUN" = 1 ]; then echo "dry run: pytest -m gpu not run"; return; fi
  local left_out=() x
  for x in ${PYTEST_EXCLUDE:-}; do left_out+=(--deselect "$x"); done
  # shellcheck disable=SC2086  # PYTEST_FILES is a list of paths
  step pytest-gpu "$PY" -m pytest -m gpu -q -rs -p no:cacheprovider --junitxml "$RESULTS/pytest-gpu-$((STEPS + 1)).xml" \
    "${left_out[@]}" ${PYTEST_FILES:-tests/test_*_gpu.py}
}

installed_engines() {  # the CPU context engines importable here, comma-separated
  "$PY" -c "import importlib.util as u; print(','.join(e for e in ('duckdb', 'polars') if u.find_spec(e)))"
}
engine_args() {  # engine_args NAMES...: "--engines a,b" for those whose library is here (polars-gpu needs polars)
  "$PY" -c "
import importlib.util as u, sys
need = {'polars-gpu': 'polars'}
names = [n for a in sys.argv[1:] for n in a.split(',') if n and u.find_spec(need.get(n, n))]
print('--engines ' + ','.join(names) if names else '')" "$@"
}

phase_groupby() {
  # GROUPBY_ARMS: both (default: cuDF and pandas, plus every engine there is), data (generate only),
  # cpu (pandas only, --device cpu), engines (DuckDB/polars only, --device cpu), gpu (cuDF and
  # Polars' GPU engine, the CPU answers taken from earlier calls ($KEEP) or results (benchmarks/results)).
  # Results made with cpu/engines are kept under $KEEP, which outlives the call while the machine is warm.
  local file="$DATA/G1_${GROUPBY_ROWS}_${GROUPBY_K}.parquet" arms=${GROUPBY_ARMS:-both} q=${GROUPBY_QUESTIONS:-all}
  local keep="$KEEP/groupby" progress=(--progress-file "$RESULTS/progress-groupby.jsonl")
  mkdir -p "$keep"
  [ -e "$file" ] || step data-groupby "${ACCEL[@]}" data groupby "$GROUPBY_ROWS" "$GROUPBY_K" "$file"
  case "$arms" in
    data) ;;
    cpu) step bench-groupby-cpu "${ACCEL[@]}" bench groupby --data "$file" --device cpu --questions "$q" \
           --repeats "$REPEATS" --results "$keep" "${progress[@]}" ;;
    engines) step bench-groupby-engines "${ACCEL[@]}" bench groupby --data "$file" --device cpu --questions "$q" \
           --engines "$(installed_engines)" --cpu-from "$keep" --repeats "$REPEATS" --results "$keep" "${progress[@]}" ;;
    gpu) local engines; read -r -a engines <<< "$(engine_args polars-gpu)"
         step bench-groupby-gpu "${ACCEL[@]}" bench groupby --data "$file" --device "$DEVICE" --questions "$q" \
           "${engines[@]}" --cpu-from "$keep" --cpu-from benchmarks/results --repeats "$REPEATS" \
           --results "$RESULTS" "${progress[@]}" ;;
    *) local engines; read -r -a engines <<< "$(engine_args duckdb polars polars-gpu)"
       step bench-groupby "${ACCEL[@]}" bench groupby --data "$file" --device "$DEVICE" --questions "$q" \
         "${engines[@]}" --repeats "$REPEATS" --results "$RESULTS" "${progress[@]}" ;;
  esac
  [ "$arms" = data ] || progress_done "${progress[1]}"
  [ "$keep" = "$RESULTS" ] || cp -n "$keep"/*.json "$RESULTS"/ 2>/dev/null || true
}

phase_join() {
  # JOIN_ARMS: both (default), cpu (pandas only, kept under $KEEP), gpu (cuDF, pandas answers from $KEEP)
  local dir="$DATA/join_${JOIN_ROWS}" keep="$KEEP/join" progress=(--progress-file "$RESULTS/progress-join.jsonl")
  mkdir -p "$keep"
  [ -d "$dir" ] || step data-join "${ACCEL[@]}" data join "$JOIN_ROWS" "$dir" --format parquet
  case "${JOIN_ARMS:-both}" in
    cpu) step bench-join-cpu "${ACCEL[@]}" bench join --data-dir "$dir" --device cpu --repeats "$REPEATS" --results "$keep" "${progress[@]}"
         cp -n "$keep"/*.json "$RESULTS"/ 2>/dev/null || true ;;
    gpu) step bench-join-gpu "${ACCEL[@]}" bench join --data-dir "$dir" --device "$DEVICE" --cpu-from "$keep" \
           --repeats "$REPEATS" --results "$RESULTS" "${progress[@]}" ;;
    *) step bench-join "${ACCEL[@]}" bench join --data-dir "$dir" --device "$DEVICE" --repeats "$REPEATS" --results "$RESULTS" "${progress[@]}" ;;
  esac
  progress_done "${progress[1]}"
}

phase_models() {
  local models=$MODELS
  [ "$models" = none ] && models=""
  if [ "$models" = auto ]; then
    if "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('cuml') is None)"; then
      models=logistic_regression,random_forest,knn,kmeans,ridge,pca
    else
      models=""
      echo "cuML is not installed: the scikit-learn/cuML pairs are left out (XGBoost only)"
    fi
  fi
  if [ -n "$models" ]; then
    step bench-models "${ACCEL[@]}" bench models --rows "$MODEL_ROWS" --models "$models" --device "$DEVICE" --repeats "$REPEATS" --results "$RESULTS" \
      --progress-file "$RESULTS/progress-models.jsonl"
    progress_done "$RESULTS/progress-models.jsonl"
  fi
  if [ "$XGB_ROWS" = 0 ]; then echo "XGB_ROWS=0: the XGBoost run is left out"; return; fi
  step bench-xgboost "${ACCEL[@]}" bench models --rows "$XGB_ROWS" --models xgboost --device "$DEVICE" --repeats "$REPEATS" --results "$RESULTS" \
    --progress-file "$RESULTS/progress-xgboost.jsonl"
  progress_done "$RESULTS/progress-xgboost.jsonl"
}

phase_crossover() {
  step bench-crossover "${ACCEL[@]}" bench crossover --operations "$CROSSOVER_OPS" --max-rows "$CROSSOVER_MAX" --device "$DEVICE" --results "$RESULTS"
}

phase_flights() {
  local rows=()
  [ -n "${FLIGHTS_ROWS:-}" ] && rows=(--rows "$FLIGHTS_ROWS")
  [ "$DRY_RUN" = 1 ] && rows=(--rows 3000)
  step run-flights "${ACCEL[@]}" run flights --device "$DEVICE" "${rows[@]}" --out "$RESULTS"
  step run-flights-fp16 "${ACCEL[@]}" run flights --device "$DEVICE" --precision fp16 "${rows[@]}" --out "$RESULTS"
  drop_pipelines
}
drop_pipelines() {  # the runs' fitted pipelines (model files) stay here: records and logs travel back (the pipeline's GPU test checks them)
  rm -rf "$RESULTS"/*.pipeline
}

phase_memory() {
  if [ "$DRY_RUN" = 1 ]; then echo "dry run: memory benchmarks not run (tested by tests/test_memory_*.py)"; return; fi
  step bench-memory "$PY" benchmarks/bench_memory.py --device gpu --budget "${MEMORY_BUDGET:-4GB}" --results "$RESULTS"
  step bench-rmm-pool "$PY" benchmarks/bench_rmm_pool.py --results "$RESULTS"
}

phase_dask() {
  if [ "$DRY_RUN" = 1 ]; then echo "dry run: Dask-CUDA benchmark not run (tested by tests/test_dask_*.py)"; return; fi
  step bench-dask "$PY" benchmarks/bench_dask_overhead.py --cluster local-cuda --scale "${DASK_SCALE:-10}" --results "$RESULTS"
  # A user's table on Dask-cuDF partitions, one Dask-CUDA worker against the single-process GPU arm.
  step bench-dask-table "$PY" benchmarks/bench_dask_overhead.py --cluster local-cuda --table "${DASK_TABLE_ROWS:-1e6}" --rounds 100 --results "$RESULTS"
  # The paired cluster run: the GPU arm on GPU workers, the CPU baseline on as many CPU workers.
  step run-flights-local-cuda "${ACCEL[@]}" run flights --cluster local-cuda --out "$RESULTS"
  drop_pipelines
  # The same pairing on a user's table (a generated CSV kept under $KEEP), then with each GPU
  # worker's device memory limited to DASK_DEVICE_LIMIT (cuDF spilling is on for accel's clusters).
  local table="$KEEP/dask-table-${DASK_TABLE_ROWS:-1e6}.csv"
  mkdir -p "$KEEP"
  [ -e "$table" ] || step data-dask-table "$PY" -m accel_fixtures.tables "${DASK_TABLE_ROWS:-1e6}" "$table"
  step run-table-local-cuda "${ACCEL[@]}" run --data "$table" --target y --probe off --cluster local-cuda --out "$RESULTS"
  step run-table-local-cuda-spill "${ACCEL[@]}" run --data "$table" --target y --probe off --cluster local-cuda \
    --device-memory-limit "${DASK_DEVICE_LIMIT:-200MB}" --out "$RESULTS"
}

phase_hpo() {
  if [ "$DRY_RUN" = 1 ]; then echo "dry run: accel hpo not run (tested by tests/test_hpo_*.py)"; return; fi
  step hpo "${ACCEL[@]}" hpo flights --device "$DEVICE" --trials "${HPO_TRIALS:-20}" --out "$RESULTS"
}

phase_report() {
  drop_pipelines
  step report "${ACCEL[@]}" report "$RESULTS" --out "$OUT/report.html"
}

main() {
  local phases=("$@")
  [ "${#phases[@]}" -gt 0 ] || phases=(all)
  if [ "${phases[*]}" = all ]; then
    phases=(install info tests flights groupby join models crossover memory dask report)
    [ "$DRY_RUN" = 1 ] && phases=(info tests flights groupby join models crossover memory dask report)  # nothing to install here
  fi
  if [ "$DRY_RUN" != 1 ]; then
    # Several invocations in one call (one per planned step) each leave their own archive.
    ARCHIVE="$OUT/results.tgz"
    local n=1
    while [ -e "$ARCHIVE" ]; do n=$((n + 1)); ARCHIVE="$OUT/results-$n.tgz"; done
  fi
  echo "gpu_check: $(date -u +%FT%TZ) phases: ${phases[*]} (DRY_RUN=$DRY_RUN, OUT=$OUT)"
  echo "gpu_check: overrides: ${ACCEL_GPU_CHECK_OVERRIDES:-none}; code: $("$PY" -c 'from accel.environment import git_state as g; s = g(); print(s["sha"], "dirty" if s["dirty"] else "clean", "from", s["source"], s.get("reason") or "")' 2>&1 | tail -1)"
  for phase in "${phases[@]}"; do
    if ! declare -F "phase_$phase" >/dev/null; then echo "unknown phase '$phase'"; FAILED+=("$phase (unknown)"); continue; fi
    "phase_$phase"
  done
  if [ -n "$ARCHIVE" ] && [ -d "$RESULTS" ]; then
    # At most 8 files come back from one call to the GPU machine: the results travel as one archive.
    pack && rm -rf "$RESULTS" && echo "results and step logs packed into $ARCHIVE"
  fi
  rm -rf "$(dirname "$STEP_LOGS")"
  if [ "${#FAILED[@]}" -gt 0 ]; then
    printf 'gpu_check: FAILED: %s\n' "${FAILED[@]}"
    return 1
  fi
  echo "gpu_check: all steps passed"
}

main "$@" 2>&1 | tee -a "$OUT/log"
