#!/usr/bin/env bash
# One call on the GPU machine: unpack cJSON, xxHash and, where the machine lacks them, OpenSSL's
# development files and ccache (carried as .deb files in .deps/: scripts/fetch-deps.sh), build for sm_80 and
# sm_90, run the tests (GPU ones included), the benchmarks and compute-sanitizer, and leave logs and
# results under $OUT. Stages: build tests quick arch80v full repeat sanitize profile (default: all but profile); arch80v builds
# a second tree for CMAKE_CUDA_ARCHITECTURES=80-virtual (the A100's code paths, JIT-compiled on this card)
# and runs its GPU tests and its --quick run beside the first. Prints a short table last.
# A command on the lent machine may run 600 s, so all stages do not fit one call. Measured there (revision
# 54356d7a950f): build 186 s, GPU tests ~100 s (4 at a time), full run 297 s, memcheck + initcheck 75 s,
# the 80-virtual build 88 s and its GPU tests ~470 s one after the other (now 4 at a time). Plan: `build tests`,
# then at once, while the machine is warm (30 s) and the build kept, `full` (its SIGINT is timed to leave
# room for its JSON, see KM_CALL_LIMIT), then `sanitize`, then `arch80v`. Measured at c9c3ff8 (that
# session's build: 210 s for sm_80 + sm_90, GPU tests 17/17 in ~60 s, full run 376 s): memcheck 72 s, initcheck
# 23 s, racecheck and synccheck each covered 32 of the 75 --quick cases in 120 s, so the four tools need two
# calls: KM_SAN_TOOLS="memcheck initcheck racecheck" KM_SAN_TIMEOUT=300, then KM_SAN_TOOLS=synccheck.
# The device tool copies the working tree, uncommitted edits included (and a .git that may be stale: never
# run git there). A recorded run must be of committed code: run this from a snapshot made by
# scripts/snapshot.sh (the committed tree in .snap/, its revision in .snap/REVISION), carry [".deps", ".snap"],
# and on the device `cd .snap && bash scripts/h200.sh ...`: the revision then comes from REVISION (KM_GIT_REV
# still wins) and the packages from the repository's .deps/ above it.
set -uo pipefail
cd "$(dirname "$0")/.."
t_start=$(date +%s)
# a snapshot names its revision (scripts/snapshot.sh); git there could be another tree's
[ -z "${KM_GIT_REV:-}" ] && [ -f REVISION ] && KM_GIT_REV=$(cat REVISION)
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
stages=${*:-build tests quick arch80v full repeat sanitize}
has() { [[ " $stages " == *" $1 "* ]]; }
summary="$OUT/summary.txt"
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
elapsed() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }

# cJSON and xxHash are not on that machine: unpack the carried Debian packages into a private prefix.
# libssl-dev (headers, libcrypto.pc) only where the machine has no libcrypto development files; its
# libcrypto.so then points at the machine's own libcrypto.so.3, or at the carried libssl3 where it has none.
prefix=/tmp/kvdeps
multiarch=usr/lib/x86_64-linux-gnu
deps=.deps
[ -d "$deps" ] || deps=../.deps # run from a snapshot (.snap/)
if [ -d "$deps" ]; then
  rm -rf "$prefix"
  for f in "$deps"/libcjson*.deb "$deps"/libxxhash*.deb; do dpkg -x "$f" "$prefix"; done
  # ccache and its libhiredis, where carried and the machine has none (the build below then uses it)
  if ! command -v ccache >/dev/null 2>&1; then
    for f in "$deps"/ccache_*.deb "$deps"/libhiredis*.deb; do [ -f "$f" ] && dpkg -x "$f" "$prefix"; done
  fi
  if ! pkg-config --exists libcrypto 2>/dev/null; then
    dpkg -x "$deps"/libssl-dev_*.deb "$prefix"
    # its configuration.h sits in the multiarch include folder, which the compiler searches only under /usr
    sed -i 's|^Cflags: .*|& -I${includedir}/x86_64-linux-gnu|' "$prefix/$multiarch/pkgconfig/libcrypto.pc"
    if [ -e "/$multiarch/libcrypto.so.3" ]; then
      ln -sf "/$multiarch/libcrypto.so.3" "$prefix/$multiarch/libcrypto.so"
    else
      dpkg -x "$deps"/libssl3_*.deb "$prefix"
    fi
  fi
  # each .pc names /usr: point it at the prefix (libcjson.pc spells libdir and includedir out, the others
  # derive them from prefix=)
  for pc in "$prefix/$multiarch"/pkgconfig/*.pc; do
    sed -i -e "s|^prefix=/usr\$|prefix=$prefix/usr|" -e "s|^libdir=/usr|libdir=$prefix/usr|" \
      -e "s|^includedir=/usr|includedir=$prefix/usr|" "$pc"
  done
fi
export PKG_CONFIG_PATH="$prefix/usr/lib/x86_64-linux-gnu/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

note "revision ${KM_GIT_REV:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)} on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | paste -sd ';' -)"

# NCCL for the p2p/nccl cases: $KM_NCCL_ROOT when set, else the CUDA toolkit's (CMake finds it there itself),
# else PyTorch's nvidia-nccl wheel (include/nccl.h and lib/libnccl.so.2 under site-packages/nvidia/nccl).
# None found: the build says so and those cases skip with the reason.
nccl_root=${KM_NCCL_ROOT:-}
if [ -z "$nccl_root" ] && ! ls /usr/local/cuda/include/nccl.h /usr/include/nccl.h >/dev/null 2>&1; then
  nccl_root=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  [ -n "$nccl_root" ] && [ -f "$nccl_root/include/nccl.h" ] && ls "$nccl_root"/lib/libnccl.so* >/dev/null 2>&1 ||
    nccl_root=""
fi
nccl_where=${nccl_root:+$nccl_root (KM_NCCL_ROOT)}
[ -n "$nccl_where" ] || nccl_where=$(ls /usr/local/cuda/include/nccl.h /usr/include/nccl.h 2>/dev/null | head -1 || true)
note "nccl: ${nccl_where:-none found, the p2p/nccl cases skip}"
# The device copies the carried tree afresh on every call (a snapshot's build/ goes with it), so make alone rebuilds
# everything each time (75-95 s of device time a call at 5206b20). With ccache the objects of an earlier call of the
# same warm machine come from its cache, outside the tree (KM_CCACHE=0: without it).
launcher=()
ccache_bin=$(command -v ccache || true)
[ -z "$ccache_bin" ] && [ -x "$prefix/usr/bin/ccache" ] && ccache_bin="$prefix/usr/bin/ccache"
# a carried ccache that cannot run there (a library it links missing or too old) is left out, with a note
if [ -n "$ccache_bin" ] && ! "$ccache_bin" --version >/dev/null 2>&1; then
  note "ccache: $ccache_bin does not run here ($("$ccache_bin" --version 2>&1 | head -1)); building without it"
  ccache_bin=""
fi
if [ -n "$ccache_bin" ] && [ "${KM_CCACHE:-1}" != 0 ]; then
  export CCACHE_DIR=${CCACHE_DIR:-/tmp/kvccache} CCACHE_BASEDIR=$PWD CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-4G}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER="$ccache_bin" -DCMAKE_CXX_COMPILER_LAUNCHER="$ccache_bin"
    -DCMAKE_CUDA_COMPILER_LAUNCHER="$ccache_bin")
  "$ccache_bin" --zero-stats >/dev/null 2>&1
fi
if has build; then
  t0=$(date +%s)
  rm -f build/CMakeCache.txt # a warm machine keeps build/: start from the current tree's settings
  cmake -B build -S . -DCMAKE_PREFIX_PATH="$prefix/usr" ${KM_GIT_REV:+-DKM_GIT_REV=$KM_GIT_REV} "${launcher[@]}" \
    ${nccl_root:+-DKM_NCCL_ROOT=$nccl_root} \
    ${KM_ARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$KM_ARCHS} >"$OUT/build.log" 2>&1 &&
    cmake --build build -j"$(nproc)" --target micro >>"$OUT/build.log" 2>&1
  rc=$?
  note "build micro: exit $rc in $(( $(date +%s) - t0 )) s; $(grep -m1 -- '-- NCCL' "$OUT/build.log" | sed 's/^-- //')"
  [ $rc -eq 0 ] || { grep -B2 -A8 -E "error|Error" "$OUT/build.log" | head -60; exit 1; }
  # the rest (tests, report) keeps going past a failure so the benchmarks still run; without the tests stage
  # only report is built beside micro (the tests' ~130 objects cost the full run ~20-30 s of its 600), and the targets
  # KM_EXTRA_TARGETS names (e.g. "gpu_attn", for a test run later in the same call: a build outside this script
  # lacks the carried ccache's library path, and failed so at 5d26cf2)
  rest=()
  # shellcheck disable=SC2206
  has tests || rest=(--target report ${KM_EXTRA_TARGETS:-})
  cmake --build build -j"$(nproc)" "${rest[@]}" -- -k >>"$OUT/build.log" 2>&1
  rc=$?
  note "build all: exit $rc in $(( $(date +%s) - t0 )) s${launcher:+; ccache: $("$ccache_bin" --print-stats 2>/dev/null | awk -F'\t' '$1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 } $1 == "cache_miss" { m = $2 } END { printf "%d hits, %d misses", h, m }')}"
  [ $rc -eq 0 ] || grep -B2 -A8 -E "error|Error" "$OUT/build.log" | head -40
fi
cd build || exit 1
if has tests; then
  # KM_CTEST_ARGS narrows or orders the tests (e.g. "-L gpu -E gpu_micro_smoke -j1"); default: all, 4 at a
  # time, but without gpu_micro_smoke when the full run shares the call (it took 200 s at db2a279 and left the
  # full run 243 s, too few to finish)
  default_ctest="-j4"
  has full && default_ctest="-j4 -E gpu_micro_smoke"
  ctest --output-on-failure ${KM_CTEST_ARGS:-$default_ctest} >"$OUT/ctest.log" 2>&1
  note "ctest: exit $? ($(grep -E 'tests passed|tests failed' "$OUT/ctest.log"))"
  grep -E "^ *[0-9]+/[0-9]+ Test" "$OUT/ctest.log" | grep -v Passed | tee -a "$summary"
fi
if has quick; then
  t0=$(date +%s%N)
  ./micro --quick --json "$OUT/quick.json" >"$OUT/quick.txt" 2>&1
  rc=$?
  note "micro --quick: exit $rc in $(elapsed "$t0") s wall"
fi
if has arch80v; then
  # compute_80 PTX only: no Hopper instruction anywhere, so every sm_90-only path must skip with its reason
  t0=$(date +%s)
  rm -f ../build-80v/CMakeCache.txt
  (cd .. && cmake -B build-80v -S . -DCMAKE_PREFIX_PATH="$prefix/usr" ${KM_GIT_REV:+-DKM_GIT_REV=$KM_GIT_REV} "${launcher[@]}" \
    -DCMAKE_CUDA_ARCHITECTURES=80-virtual && cmake --build build-80v -j"$(nproc)") >"$OUT/build-80v.log" 2>&1
  rc=$?
  note "build (80-virtual): exit $rc in $(( $(date +%s) - t0 )) s"
  if [ $rc -eq 0 ]; then
    # JIT-compiled from PTX, gpu_attn and gpu_micro_smoke take ~130 and ~155 s there: run them side by side
    # (KM_CTEST80_ARGS, default -j4; one after the other the 80-virtual tests took ~470 s of a 600 s call)
    (cd ../build-80v && ctest -L gpu --output-on-failure ${KM_CTEST80_ARGS:--j4} >"$OUT/ctest-80v.log" 2>&1)
    note "ctest -L gpu (80-virtual): exit $? ($(grep -E 'tests passed|tests failed' "$OUT/ctest-80v.log"))"
    t0=$(date +%s%N)
    ../build-80v/micro --quick --json "$OUT/quick-80v.json" >"$OUT/quick-80v.txt" 2>&1
    note "micro --quick (80-virtual): exit $? in $(elapsed "$t0") s wall, $(grep -o 'body is compiled out' "$OUT/quick-80v.json" | wc -l) case(s) skipped for want of sm_90 code"
    [ -f "$OUT/quick.json" ] && ./report compare "$OUT/quick.json" "$OUT/quick-80v.json" --format text >"$OUT/compare-80v.txt" 2>&1
  else
    grep -B2 -A8 -E "error|Error" "$OUT/build-80v.log" | head -40
  fi
fi
if has full; then
  t0=$(date +%s%N)
  # KM_FULL_TIMEOUT (s): stop with SIGINT, so what finished is still written (marked incomplete).
  # KM_CALL_LIMIT (s, default 600: the GPU machine's limit per command): the SIGINT comes early enough
  # that the JSON, the tables and the archive are written before the call itself is killed (the build
  # took 136 s in one call, and a full run stopped by the call limit writes nothing). The 35 s kept back: up to
  # 20 s for micro to write after the SIGINT (--kill-after), then the tables and the archive; measured at a387e84
  # (build 108 s): micro exited 2.6 s after its SIGINT and everything after it took ~4 s (545.8 s in all), where
  # the 60 s kept back before cut that run 14 cases short
  left=$(( ${KM_CALL_LIMIT:-600} - ($(date +%s) - t_start) - 35 ))
  full_timeout=${KM_FULL_TIMEOUT:-$left}
  [ "$full_timeout" -gt "$left" ] && full_timeout=$left
  [ "$full_timeout" -lt 1 ] && full_timeout=1
  note "micro (full): SIGINT after $full_timeout s at the latest"
  timeout -s INT --kill-after=20 "$full_timeout" ./micro ${KM_FILTER:+--filter "$KM_FILTER"} \
    --table all --json "$OUT/h200.json" --params "$OUT/h200-params.json" >"$OUT/full.txt" 2>&1
  rc=$?
  note "micro (full${KM_FILTER:+, filter $KM_FILTER}): exit $rc in $(elapsed "$t0") s wall"
  # no GPU time: the technique table of an MLA and a hybrid model from the same run's rows, and the
  # prefix-cache cliff (host simulator); they travel in logs.tgz (the .txt files and prefix-cliff.json)
  for m in ${KM_TECH_MODELS:-deepseek-v3 nemotron-h-8b}; do
    ./report techniques "$OUT/h200.json" --model "$m" --format markdown >"$OUT/techniques-$m.txt" 2>&1
    note "report techniques --model $m: exit $?"
  done
  ./micro --prefix-sim cliff --sweep --json "$OUT/prefix-cliff.json" >"$OUT/prefix-cliff.txt" 2>&1
  note "micro --prefix-sim cliff --sweep: exit $?"
fi
if has repeat; then
  # a second full run back to back, for the repeatability check (report compare h200.json h200-repeat.json)
  t0=$(date +%s%N)
  ./micro ${KM_FILTER:+--filter "$KM_FILTER"} --json "$OUT/h200-repeat.json" >"$OUT/repeat.txt" 2>&1
  rc=$?
  note "micro (full, repeat): exit $rc in $(elapsed "$t0") s wall"
fi
if has sanitize; then
  # every --quick case under each tool: memcheck and synccheck at full size, racecheck and initcheck
  # (10-100x slower per byte) with --smoke; KM_SAN_FILTER narrows all four when set
  KM_SAN_TIMEOUT=${KM_SAN_TIMEOUT:-300} bash ../scripts/sanitize-gpu.sh . | tee -a "$summary"
fi
if has profile; then
  # Nsight Compute over the kernels of the cases KM_PROFILE_FILTER selects, KM_PROFILE_KERNELS (regex,
  # default: every kernel, so with a small KM_PROFILE_COUNT the case's input fill and poison kernels, which
  # run first, are what gets profiled: name the kernel) at most KM_PROFILE_COUNT launches; clocks left
  # alone. KM_PROFILE_ARGS: micro's
  # flags (default --smoke: each case verified, then launched once, on working sets cut to 16 MiB; "--quick"
  # or "" profiles the case at its own size). The report's text goes to profile.txt.
  ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  if [ -z "${KM_PROFILE_FILTER:-}" ] || [ -z "$ncu_bin" ]; then
    note "profile: skipped (${ncu_bin:+set KM_PROFILE_FILTER}${ncu_bin:-no ncu on this machine})"
  else
    # KM_PROFILE_FILTER may hold several filters separated by ';': one Nsight Compute session each, so
    # every case gets its own KM_PROFILE_COUNT launches (KM_PROFILE_TIMEOUT s each, default 240)
    : >"$OUT/profile.txt"
    # KM_PROFILE_SECTIONS: Nsight Compute sections, space-separated (ComputeWorkloadAnalysis adds the pipes'
    # utilisation, MemoryWorkloadAnalysis_Tables shared memory's wavefronts and bank conflicts)
    sections=${KM_PROFILE_SECTIONS:-SpeedOfLight MemoryWorkloadAnalysis Occupancy WarpStateStats SchedulerStats LaunchStats}
    IFS=';' read -ra profile_filters <<<"$KM_PROFILE_FILTER"
    for pf in "${profile_filters[@]}"; do
      t0=$(date +%s%N)
      echo "==== profile: $pf" >>"$OUT/profile.txt"
      # KM_PROFILE_NCU_ARGS: further Nsight Compute flags (e.g. "--print-details all": the sections' tables and charts)
      # shellcheck disable=SC2086
      timeout -s INT "${KM_PROFILE_TIMEOUT:-240}" "$ncu_bin" --clock-control none ${KM_PROFILE_NCU_ARGS:-} ${KM_PROFILE_KERNELS:+-k "regex:$KM_PROFILE_KERNELS"} \
        -c "${KM_PROFILE_COUNT:-4}" $(for sec in $sections; do echo --section "$sec"; done) \
        ./micro ${KM_PROFILE_ARGS---smoke} --filter "$pf" -- --benchmark_color=false >>"$OUT/profile.txt" 2>&1
      note "profile $pf: exit $? in $(elapsed "$t0") s"
    done
  fi
fi
# at most 8 files come back: the results stay whole (the two --quick runs side by side), the logs travel in one archive
(cd "$OUT" && tar czf logs.tgz --remove-files $(ls *.log *.txt prefix-cliff.json 2>/dev/null | grep -v '^summary.txt$'))
echo
echo "==== errors in runs"
tar xzf "$OUT/logs.tgz" -O quick.txt full.txt 2>/dev/null | grep -E "^[a-z_/0-9.]+: error|ERROR" | head -30
echo "==== latency table"
tar xzf "$OUT/logs.tgz" -O full.txt 2>/dev/null | sed -n '/^Latency and bandwidth/,/^KV bytes per token/p' | head -80
echo "==== summary"
cat "$summary"
