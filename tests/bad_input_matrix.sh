#!/usr/bin/env bash
# Bad-input matrix for ./micro (cases beyond tests/cli_tests.sh): flags, sizes, model files and output paths.
# Each case runs twice, as a byte-table call (--table bytes) and as a benchmark call (--quick), and must exit 2
# with exactly one stderr line that names the problem, print nothing on stdout, and leave no output file nor
# temporary (*.tmp.*) behind: argument errors come before the GPU is looked for (no-GPU exit 3), so the
# benchmark calls also behave the same on a machine without a GPU.
# usage: bad_input_matrix.sh path/to/micro [fixtures folder]
set -u
micro="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")" # absolute: each call runs in its own folder
fixtures="${2:-$(cd "$(dirname "$0")" && pwd)/fixtures}"
bad="$fixtures/bad"
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
cases=0

# Fixed places for the output-path cases: a regular file (a parent that is not a folder), a folder, and a folder
# the test cannot write to (as root every folder is writable, so /proc, where nothing can be created, stands in).
fix="$tmp/fix"
mkdir -p "$fix/folder"
echo "not a folder" >"$fix/afile"
if [ "$(id -u)" -eq 0 ]; then
  unwritable=/proc/kvmicro-bad-input
else
  mkdir "$fix/readonly" && chmod 0555 "$fix/readonly"
  unwritable="$fix/readonly"
fi
long=$(printf 'x%.0s' $(seq 1 300))
long="$tmp/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/$long/result.json"
fix_before=$(cd "$fix" && find . | sort)

# check_case MODE WHAT PATTERN ARGS...: one invocation; MODE's own flags first, so the case's flags win.
check_case() {
  local mode="$1" what="$2" pattern="$3"
  shift 3
  local work="$tmp/work" prefix
  rm -rf "$work" && mkdir "$work"
  # valid output paths on every call: a bad argument elsewhere must still leave no file there
  if [ "$mode" = bytes ]; then prefix=(--table bytes); else prefix=(--quick); fi
  prefix+=(--json "$work/result.json" --params "$work/params.json")
  (cd "$work" && "$micro" "${prefix[@]}" "$@" >"$tmp/stdout" 2>"$tmp/stderr")
  local rc=$? lines problem=""
  lines=$(wc -l <"$tmp/stderr")
  [ "$rc" -eq 2 ] || problem="exit $rc (want 2)"
  [ "$lines" -eq 1 ] || problem="${problem:+$problem; }$lines stderr lines (want 1)"
  [ "$lines" -eq 1 ] && ! grep -qF -- "$pattern" "$tmp/stderr" && problem="${problem:+$problem; }stderr does not name '$pattern'"
  [ -s "$tmp/stdout" ] && problem="${problem:+$problem; }wrote to stdout"
  [ -n "$(ls -A "$work")" ] && problem="${problem:+$problem; }left $(ls -A "$work" | tr '\n' ' ')"
  [ "$(cd "$fix" && find . | sort)" != "$fix_before" ] && problem="${problem:+$problem; }changed $fix"
  cases=$((cases + 1))
  if [ -n "$problem" ]; then
    echo "FAIL [$mode] $what: micro $* -> $problem"
    sed 's/^/  stderr: /' "$tmp/stderr" | head -5
    fail=1
  fi
}

# bad WHAT PATTERN ARGS...: the case in both modes.
bad() {
  check_case bytes "$@"
  check_case bench "$@"
}

# ---- flags
bad "repetitions above 1000" "--repetitions" --repetitions 1001
bad "fractional repetitions" "--repetitions" --repetitions 2.5
bad "zero min-time" "--min-time" --min-time 0
bad "min-time not a number" "--min-time" --min-time nan
bad "device not a number" "--device" --device gpu0
bad "unknown kv dtype" "--kv-dtype" --kv-dtype int8
bad "kv dtype by its old short name" "--kv-dtype" --kv-dtype bf16
bad "unknown mamba ssm dtype" "--mamba-ssm-dtype" --mamba-ssm-dtype fp8
bad "turboquant on an MLA model" "--kv-dtype turboquant_3bit_nc" --model deepseek-v3 --kv-dtype turboquant_3bit_nc
bad "value given to the override switch" "--allow-long-max-model-len=1" --allow-long-max-model-len=1
bad "empty format after =" "--format" --format=
bad "empty filter after =" "--filter" --filter=
bad "empty model after =" "--model" --model=
bad "json without a value" "--json" --json
bad "table without a value" "--table" --table
bad "value given to a switch" "--quick=1" --quick=1
bad "single-dash flag" "-q" -q
bad "smoke with outputs" "--smoke cannot go with --json" --smoke

# ---- sizes and counts
bad "hex kv budget" "--kv-budget" --kv-budget 0x40G
bad "exponent kv budget" "--kv-budget" --kv-budget 1e9
bad "negative kv budget" "--kv-budget" --kv-budget -5G
bad "kv budget with a leading space" "--kv-budget" --kv-budget " 64G"
bad "lower-case unit" "--kv-budget" --kv-budget 64gib
bad "kv budget below one block" "--kv-budget" --kv-budget 1000
bad "kv budget beyond 2^53 B" "--kv-budget" --kv-budget 10000TiB
bad "negative host budget" "--host-budget" --host-budget -1
bad "unknown host unit" "--host-budget" --host-budget 1.5XiB
bad "max-model-len overflow" "--max-model-len" --max-model-len 99999999999999999999
bad "zero max-model-len" "--max-model-len" --max-model-len 0
bad "max-model-len above 2^40" "--max-model-len" --max-model-len 9223372036854775807
bad "block size above 2^40" "--block-size" --block-size 1099511627777
bad "block size with trailing text" "--block-size" --block-size 16abc
bad "fractional block size" "--block-size" --block-size 2.5
bad "zero batched tokens" "--max-num-batched-tokens" --max-num-batched-tokens 0
bad "budget below one request" "cannot hold one request of --max-model-len 40960" --kv-budget 6039797759
bad "max-model-len above the model's" "max_model_len 32768 (max_position_embeddings" --model mistral-7b-v0.1 --max-model-len 40960

# ---- model files: every malformed fixture, a folder without config.json, an empty path component
for f in "$bad"/*.json; do
  bad "model $(basename "$f")" "$(basename "$f")" --model "$f"
done
bad "model folder without config.json" "config.json" --model "$fix/folder"
bad "model path through a file" "afile" --model "$fix/afile/config.json"

# ---- output paths
bad "json in an unwritable folder" "--json" --json "$unwritable/result.json"
bad "params in an unwritable folder" "--params" --params "$unwritable/params.json"
bad "params is a folder" "--params" --params "$fix/folder"
bad "json under a file" "--json" --json "$fix/afile/result.json"
bad "params under a file" "--params" --params "$fix/afile/params.json"
bad "json path too long" "--json" --json "$long"

# ---- controls: the same calls without a bad argument are accepted (the matrix tests what it claims to)
work="$tmp/work"
rm -rf "$work" && mkdir "$work"
"$micro" --table bytes --json "$work/result.json" --params "$work/params.json" >/dev/null 2>"$tmp/stderr"
rc=$?
if [ "$rc" -ne 0 ] || [ ! -s "$work/result.json" ]; then
  echo "FAIL control: micro --table bytes --json ... exited $rc or wrote no JSON"; cat "$tmp/stderr"; fail=1
fi
if ! nvidia-smi -L >/dev/null 2>&1; then # with a GPU this would run the benchmarks: left to the GPU tests
  "$micro" --quick --json "$work/result.json" --params "$work/params.json" >/dev/null 2>"$tmp/stderr"
  rc=$?
  if [ "$rc" -ne 3 ]; then echo "FAIL control: micro --quick without a GPU exited $rc (want 3)"; cat "$tmp/stderr"; fail=1; fi
fi

if [ "$fail" -ne 0 ]; then echo "bad_input_matrix: FAILED"; exit 1; fi
echo "bad_input_matrix: all $cases calls exit 2 with one stderr line and no file left behind"
