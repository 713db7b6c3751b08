#!/usr/bin/env bash
# Nsight Compute with PC sampling on one kernel of one micro case, folded per opcode: writes
# $OUT/<name>.ncu-rep, <name>-details.txt (every section's table), <name>-sass.csv (the source page) and
# <name>-opcodes.txt (scripts/ncu-opcodes.py's table). Run from the build folder (micro in it).
# Usage: ncu-source.sh NAME FILTER KERNEL_REGEX [PER]
#   NAME          file stem under $OUT
#   FILTER        micro --filter (one case: its verification launch comes first, so -c 1 profiles it)
#   KERNEL_REGEX  the kernel to profile (ncu -k regex:...)
#   PER           warp tiles (or any unit) the opcode table divides executed counts by (optional)
# Environment: KM_NCU_TIMEOUT (s, default 150), KM_NCU_SECTIONS (default SourceCounters WarpStateStats
# SchedulerStats ComputeWorkloadAnalysis), KM_NCU_ARGS (micro flags before --filter, default none: the case at its
# own size). Clocks are left alone (--clock-control none), as scripts/h200.sh's profile stage does.
set -uo pipefail
[ $# -ge 3 ] || { echo "usage: ncu-source.sh NAME FILTER KERNEL_REGEX [PER]" >&2; exit 2; }
name=$1 filter=$2 kern=$3 per=${4:-}
out=${OUT:-.}
here=$(cd "$(dirname "$0")" && pwd)
ncu_bin=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
[ -n "$ncu_bin" ] || { echo "ncu-source: ncu not found" >&2; exit 2; }
[ -x ./micro ] || { echo "ncu-source: ./micro not found (run from the build folder)" >&2; exit 2; }
sections=${KM_NCU_SECTIONS:-SourceCounters WarpStateStats SchedulerStats ComputeWorkloadAnalysis}
# shellcheck disable=SC2046,SC2086
timeout -s INT "${KM_NCU_TIMEOUT:-150}" "$ncu_bin" --clock-control none -k "regex:$kern" -c 1 \
  $(for s in $sections; do echo --section "$s"; done) -f -o "$out/$name" \
  ./micro ${KM_NCU_ARGS:-} --filter "$filter" -- --benchmark_color=false >"$out/$name-ncu.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ ! -f "$out/$name.ncu-rep" ]; then
  echo "ncu-source $name: ncu exit $rc ($(tail -1 "$out/$name-ncu.log"))"
  exit 1
fi
"$ncu_bin" -i "$out/$name.ncu-rep" --page details --print-details all >"$out/$name-details.txt" 2>&1
"$ncu_bin" -i "$out/$name.ncu-rep" --page source --csv --print-source sass >"$out/$name-sass.csv" 2>&1
python3 "$here/ncu-opcodes.py" "$out/$name-sass.csv" ${per:+--per "$per"} >"$out/$name-opcodes.txt" 2>&1
echo "ncu-source $name: exit $? ($(grep -m1 '^warp-level' "$out/$name-opcodes.txt"))"
