#!/usr/bin/env bash
# One call on the GPU machine: unpack cJSON, xxHash and, where the machine lacks them, OpenSSL's
# development files (carried as .deb files in .deps/), build for sm_80 and
# sm_90, run the tests (GPU ones included), the benchmarks and compute-sanitizer, and leave logs and
# results under $OUT. Stages: build tests quick full repeat sanitize (default: all). Prints a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
stages=${*:-build tests quick full repeat sanitize}
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
if [ -d .deps ]; then
  rm -rf "$prefix"
  for f in .deps/libcjson*.deb .deps/libxxhash*.deb; do dpkg -x "$f" "$prefix"; done
  if ! pkg-config --exists libcrypto 2>/dev/null; then
    dpkg -x .deps/libssl-dev_*.deb "$prefix"
    # its configuration.h sits in the multiarch include folder, which the compiler searches only under /usr
    sed -i 's|^Cflags: .*|& -I${includedir}/x86_64-linux-gnu|' "$prefix/$multiarch/pkgconfig/libcrypto.pc"
    if [ -e "/$multiarch/libcrypto.so.3" ]; then
      ln -sf "/$multiarch/libcrypto.so.3" "$prefix/$multiarch/libcrypto.so"
    else
      dpkg -x .deps/libssl3_*.deb "$prefix"
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

note "revision ${KM_GIT_REV:-$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)} on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"
if has build; then
  t0=$(date +%s)
  rm -f build/CMakeCache.txt # a warm machine keeps build/: start from the current tree's settings
  cmake -B build -S . -DCMAKE_PREFIX_PATH="$prefix/usr" ${KM_GIT_REV:+-DKM_GIT_REV=$KM_GIT_REV} \
    ${KM_ARCHS:+-DCMAKE_CUDA_ARCHITECTURES=$KM_ARCHS} >"$OUT/build.log" 2>&1 &&
    cmake --build build -j"$(nproc)" --target micro >>"$OUT/build.log" 2>&1
  rc=$?
  note "build micro: exit $rc in $(( $(date +%s) - t0 )) s"
  [ $rc -eq 0 ] || { grep -B2 -A8 -E "error|Error" "$OUT/build.log" | head -60; exit 1; }
  # the rest (tests, report) keeps going past a failure so the benchmarks still run
  cmake --build build -j"$(nproc)" -- -k >>"$OUT/build.log" 2>&1
  rc=$?
  note "build all: exit $rc in $(( $(date +%s) - t0 )) s"
  [ $rc -eq 0 ] || grep -B2 -A8 -E "error|Error" "$OUT/build.log" | head -40
fi
cd build || exit 1
if has tests; then
  ctest --output-on-failure -j4 >"$OUT/ctest.log" 2>&1
  note "ctest: exit $? ($(grep -E 'tests passed|tests failed' "$OUT/ctest.log"))"
  grep -E "^ *[0-9]+/[0-9]+ Test" "$OUT/ctest.log" | grep -v Passed | tee -a "$summary"
fi
if has quick; then
  t0=$(date +%s%N)
  ./micro --quick --json "$OUT/quick.json" >"$OUT/quick.txt" 2>&1
  rc=$?
  note "micro --quick: exit $rc in $(elapsed "$t0") s wall"
fi
if has full; then
  t0=$(date +%s%N)
  ./micro ${KM_FILTER:+--filter "$KM_FILTER"} --table all --json "$OUT/h200.json" --params "$OUT/h200-params.json" \
    >"$OUT/full.txt" 2>&1
  rc=$?
  note "micro (full${KM_FILTER:+, filter $KM_FILTER}): exit $rc in $(elapsed "$t0") s wall"
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
  KM_SAN_TIMEOUT=${KM_SAN_TIMEOUT:-150} bash ../scripts/sanitize-gpu.sh . | tee -a "$summary"
fi
# at most 8 files come back: the results stay whole, the logs travel in one archive
(cd "$OUT" && tar czf logs.tgz --remove-files $(ls *.log *.txt quick.json 2>/dev/null | grep -v '^summary.txt$'))
echo
echo "==== errors in runs"
tar xzf "$OUT/logs.tgz" -O quick.txt full.txt 2>/dev/null | grep -E "^[a-z_/0-9.]+: error|ERROR" | head -30
echo "==== latency table"
tar xzf "$OUT/logs.tgz" -O full.txt 2>/dev/null | sed -n '/^Latency and bandwidth/,/^KV bytes per token/p' | head -80
echo "==== summary"
cat "$summary"
