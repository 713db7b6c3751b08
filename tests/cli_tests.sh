#!/usr/bin/env bash
# CLI behaviour of ./micro without a GPU: help and list work, bad input is one line on stderr with
# exit 2 and no output file, and running benchmarks without a device exits 3 with the no-device line.
set -u
micro="$1"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect_usage_error() { # description, then the arguments
  local what="$1"; shift
  local out="$tmp/out" errf="$tmp/err"
  "$micro" "$@" >"$out" 2>"$errf"
  local rc=$?
  local lines
  lines=$(wc -l <"$errf")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ]; then
    echo "FAIL ($what): micro $* -> exit $rc, $lines stderr line(s):"; cat "$errf"; fail=1
  fi
  if ls "$tmp"/result* >/dev/null 2>&1; then echo "FAIL ($what): an output file was left behind"; ls "$tmp"; fail=1; fi
}

"$micro" --help >"$tmp/help" 2>&1 || { echo "FAIL: --help exited non-zero"; fail=1; }
for flag in --filter --list --quick --smoke --repetitions --min-time --device --no-verify --table --format --json \
            --params --model --kv-budget --max-model-len --allow-long-max-model-len --max-num-batched-tokens \
            --block-size --host-budget --kv-dtype --mamba-ssm-dtype; do
  grep -q -- "$flag" "$tmp/help" || { echo "FAIL: --help does not document $flag"; fail=1; }
done

# --version: one line naming the revision, build type, CUDA architectures and Google Benchmark, no GPU needed
"$micro" --version >"$tmp/version" 2>&1 || { echo "FAIL: --version exited non-zero"; fail=1; }
grep -qE '^micro \(kvmicro\) revision [0-9A-Za-z._-]+, [A-Za-z]+ build, CUDA architectures [0-9a-z,-]+, CUDA runtime [0-9]+\.[0-9]+, Google Benchmark [0-9.]+$' \
  "$tmp/version" || { echo "FAIL: --version printed: $(cat "$tmp/version")"; fail=1; }
grep -q -- "--version" "$tmp/help" || { echo "FAIL: --help does not document --version"; fail=1; }

"$micro" --list >"$tmp/list" 2>&1 || { echo "FAIL: --list exited non-zero"; fail=1; }
for name in roofline/d2d_memcpy roofline/sm_copy roofline/sm_read roofline/sm_write; do
  grep -qx "$name" "$tmp/list" || { echo "FAIL: --list lacks $name"; fail=1; }
done
n=$("$micro" --list --filter '^roofline/sm_(copy|read|write)$' | wc -l)
[ "$n" -eq 3 ] || { echo "FAIL: the anchored roofline filter listed $n cases, expected 3"; fail=1; }
"$micro" --list --filter '-roofline' | grep -q '^roofline/' && { echo "FAIL: negative filter kept roofline cases"; fail=1; }

expect_usage_error "unknown flag" --bogus
expect_usage_error "bad regex" --filter '('
expect_usage_error "bad repetitions" --repetitions 0
expect_usage_error "bad min-time" --min-time abc
expect_usage_error "bad format" --format yaml
expect_usage_error "bad table" --table speed
expect_usage_error "bad device" --device -1
expect_usage_error "bad kv budget" --table bytes --kv-budget 12XB
expect_usage_error "zero kv budget" --table bytes --kv-budget 0
expect_usage_error "negative block size" --table bytes --block-size -16
expect_usage_error "missing value" --filter
expect_usage_error "stray argument" quant
expect_usage_error "unknown benchmark flag" --list -- --benchmark_bogus=1
expect_usage_error "unwritable json" --json /nonexistent-dir/result.json
expect_usage_error "json is a folder" --json "$tmp"
expect_usage_error "missing model" --table bytes --model "$tmp/nope.json"
expect_usage_error "no match" --filter 'no-such-case-xyz'
expect_usage_error "newline in a value" --table bytes --kv-budget "$(printf '12\nX')"
expect_usage_error "infinite size" --table bytes --host-budget "1$(printf '0%.0s' $(seq 1 320))TiB"
# --smoke publishes and times nothing, and exists to verify: each conflict is one line naming the other flag
for conflict in "--table latency" "--table bytes" "--min-time 1" "--repetitions 3" "--no-verify" \
                "--params $tmp/result.params.json"; do
  # shellcheck disable=SC2086
  expect_usage_error "--smoke with $conflict" --smoke $conflict
  grep -q -- "--smoke cannot go with ${conflict%% *}" "$tmp/err" || { echo "FAIL: --smoke $conflict: $(cat "$tmp/err")"; fail=1; }
done
"$micro" --smoke --quick --list >/dev/null 2>&1 || { echo "FAIL: --smoke --list exited non-zero"; fail=1; }

# no GPU on this machine: benchmarks exit 3 with one line naming the problem
if ! nvidia-smi -L >/dev/null 2>&1; then
  "$micro" --filter roofline >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne 3 ] || ! grep -q '^no CUDA device: ' "$tmp/err"; then
    echo "FAIL: without a GPU, micro exited $rc:"; cat "$tmp/err"; fail=1
  fi
fi

# the byte table needs no GPU, and its JSON file is written whole
"$micro" --table bytes >"$tmp/bytes.txt" 2>&1 || { echo "FAIL: --table bytes exited non-zero"; fail=1; }
grep -q '147,456' "$tmp/bytes.txt" || { echo "FAIL: byte table lacks 147,456 B/token"; fail=1; }
# a terminal's width: the text tables within 120 columns (long explanations as numbered notes), case names
# within the console's name column (62) so every Google Benchmark line lines up within 160
wide=$(awk 'length($0) > 120' "$tmp/bytes.txt" | head -3)
[ -z "$wide" ] || { echo "FAIL: byte table lines over 120 columns:"; echo "$wide"; fail=1; }
grep -q '^notes:$' "$tmp/bytes.txt" && grep -q '^\[1\] = the model as configured' "$tmp/bytes.txt" ||
  { echo "FAIL: the byte table's explanations are not numbered notes"; fail=1; }
long=$("$micro" --list | awk 'length($0) > 62')
[ -z "$long" ] || { echo "FAIL: case names over 62 columns:"; echo "$long"; fail=1; }
"$micro" --table bytes --json "$tmp/result.json" >/dev/null 2>&1 || { echo "FAIL: --table bytes --json failed"; fail=1; }
[ -s "$tmp/result.json" ] || { echo "FAIL: no JSON written"; fail=1; }
ls "$tmp" | grep -q '\.tmp\.' && { echo "FAIL: a temporary file was left behind"; fail=1; }

if [ "$fail" -ne 0 ]; then echo "cli_tests: FAILED"; exit 1; fi
echo "cli_tests: all checks passed"
