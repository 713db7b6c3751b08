#!/usr/bin/env bash
# Several calls of scripts/h200.sh on the same GPU machine as one folder for scripts/record-run.sh: a recorded run
# is often a full run in one call and the tests and sanitizers in another (a command there may run 600 s).
# Usage: merge-calls.sh OUTDIR DIR1 COMMAND1 [DIR2 COMMAND2 ...]
#   DIRn: what one call left under $OUT (summary.txt, logs.tgz where it wrote one; the call with the full run also
#         h200.json and h200-params.json, and h200-repeat.json, quick.json, quick-80v.json where it wrote them)
#   COMMANDn: the command that call ran, as it is to be quoted in the record
# OUTDIR (must not exist) gets: summary.txt (each call's under "call N:"), commands.txt (one numbered line a call),
# logs.tgz (every call's logs; where two calls left a file of the same name, the later keeps the name and an
# earlier one becomes NAME-callN.EXT), and the run files of the one call that has h200.json. Exactly one call
# must have h200.json; anything else is one line on stderr and exit 2, with OUTDIR not created.
set -uo pipefail
die() { echo "merge-calls: $*" >&2; exit 2; }
[ $# -ge 3 ] && [ $(( ($# - 1) % 2 )) -eq 0 ] || die "usage: merge-calls.sh OUTDIR DIR1 COMMAND1 [DIR2 COMMAND2 ...]"
out=$1
shift
[ -e "$out" ] && die "$out exists: give a folder that does not"
dirs=() cmds=()
while [ $# -gt 0 ]; do
  [ -d "$1" ] || die "$1: not a folder"
  [ -f "$1/summary.txt" ] || die "$1: no summary.txt (not a folder scripts/h200.sh wrote)"
  [ -n "$2" ] || die "$1: empty command"
  dirs+=("$1") cmds+=("$2")
  shift 2
done
runs=0
for d in "${dirs[@]}"; do [ -f "$d/h200.json" ] && runs=$((runs + 1)) && run_dir=$d; done
[ "$runs" -eq 1 ] || die "$runs of the calls have h200.json: exactly one must (the full run)"
[ -f "$run_dir/h200-params.json" ] || die "$run_dir: h200.json without h200-params.json"

work=$(mktemp -d "${TMPDIR:-/tmp}/merge-calls.XXXXXX") || die "no temporary folder"
trap 'rm -rf "$work"' EXIT
mkdir "$work/out" "$work/logs"
n=${#dirs[@]}
echo "$n calls on the same machine, one after the other:" >"$work/out/commands.txt"
for i in "${!dirs[@]}"; do
  d=${dirs[$i]} k=$((i + 1))
  echo "$k. \`${cmds[$i]}\`" >>"$work/out/commands.txt"
  { [ "$k" -gt 1 ] && echo; echo "call $k:"; cat "$d/summary.txt"; } >>"$work/out/summary.txt"
  [ -f "$d/logs.tgz" ] || continue
  mkdir "$work/call$k"
  tar xzf "$d/logs.tgz" -C "$work/call$k" || die "$d/logs.tgz: not a gzip tar archive"
done
# later calls first, so that an earlier call's file of a name already taken gets its -callN name
for ((k = n; k >= 1; k--)); do
  [ -d "$work/call$k" ] || continue
  for f in "$work/call$k"/*; do
    [ -e "$f" ] || continue
    name=$(basename "$f")
    if [ -e "$work/logs/$name" ]; then
      base=${name%.*} ext=${name##*.}
      [ "$base" = "$name" ] && name="$name-call$k" || name="$base-call$k.$ext"
    fi
    mv "$f" "$work/logs/$name"
  done
done
(cd "$work/logs" && tar czf "$work/out/logs.tgz" .) || die "could not write logs.tgz"
for f in h200.json h200-params.json h200-repeat.json quick.json quick-80v.json; do
  [ -f "$run_dir/$f" ] && cp "$run_dir/$f" "$work/out/$f"
done
mkdir -p "$(dirname "$out")" && mv "$work/out" "$out" || die "could not create $out"
echo "merge-calls: $n calls in $out (the full run from $run_dir)"
