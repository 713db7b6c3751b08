#!/usr/bin/env bash
# micro --prefix-sim and the prefix family's host-only cases, with no GPU: every bad workload or simulator
# flag is one stderr line naming it, exit 2, nothing on stdout and no file written (a valid --json path is on
# every call); the presets print their tables (pass 2 of the cliff hits nothing), --json is written whole;
# micro --help names the command; the host-only hash cases run and verify without a device.
# usage: prefix_sim_cli.sh path/to/micro
set -u
micro="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

bad() { # WHAT PATTERN ARGS...
  local what="$1" pattern="$2"
  shift 2
  rm -rf "$tmp/work" && mkdir "$tmp/work"
  "$micro" --json "$tmp/work/sim.json" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? problem=""
  [ "$rc" -eq 2 ] || problem="exit $rc (want 2)"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || problem="${problem:+$problem; }$(wc -l <"$tmp/err") stderr lines"
  grep -qF -- "$pattern" "$tmp/err" || problem="${problem:+$problem; }stderr does not name '$pattern'"
  [ -s "$tmp/out" ] && problem="${problem:+$problem; }wrote to stdout"
  [ -n "$(ls -A "$tmp/work")" ] && problem="${problem:+$problem; }left $(ls -A "$tmp/work")"
  if [ -n "$problem" ]; then echo "FAIL ($what): micro $* -> $problem"; sed 's/^/  /' "$tmp/err"; fail=1; fi
}

bad "no preset" "--prefix-sim needs a value" --prefix-sim
bad "unknown preset" "--prefix-sim 'warm'" --prefix-sim warm
bad "zero requests" "--requests '0'" --prefix-sim cliff --requests 0
bad "requests not a number" "--requests 'many'" --prefix-sim cliff --requests many
bad "too many requests" "--requests '1000001'" --prefix-sim cliff --requests 1000001
bad "negative prefix" "--shared-prefix '-1'" --prefix-sim shared-prefix --shared-prefix -1
bad "zero output" "--output-tokens '0'" --prefix-sim custom --output-tokens 0
bad "zero passes" "--passes '0'" --prefix-sim cliff --passes 0
bad "zero concurrency" "--concurrency '0'" --prefix-sim cliff --concurrency 0
bad "missing value" "--document-tokens needs a value" --prefix-sim cliff --document-tokens
bad "unknown policy" "--policy 'fifo'" --prefix-sim cliff --policy fifo
bad "unknown hash" "--hash 'md5'" --prefix-sim cliff --hash md5
bad "empty prompt" "prompt is empty" --prefix-sim custom --suffix-tokens 0
bad "beyond max-model-len" "--max-model-len" --prefix-sim cliff --max-model-len 8192
bad "cache below one request" "--kv-budget" --prefix-sim cliff --kv-budget 1GiB
bad "budget below a block" "--kv-budget" --prefix-sim cliff --kv-budget 1000
bad "sweep of one pass" "--passes >= 2" --prefix-sim shared-prefix --sweep
bad "sweep over shared tokens only" "--sweep" --prefix-sim custom --suffix-tokens 0 --shared-prefix 64 --passes 2 --sweep
bad "a suite flag" "--filter does not go with --prefix-sim" --prefix-sim cliff --filter prefix
bad "a table" "--table does not go with --prefix-sim" --prefix-sim cliff --table bytes
bad "windowed model" "full-attention layers only" --prefix-sim cliff --model mistral-7b-v0.1
bad "unknown model" "no-such-model" --prefix-sim cliff --model no-such-model
bad "unknown flag" "unknown flag '--bogus'" --prefix-sim cliff --bogus
bad "bad format" "--format" --prefix-sim cliff --format yaml
bad "block size beyond the hasher" "--block-size" --prefix-sim custom --block-size 8192 --kv-budget 1T
if "$micro" --prefix-sim cliff --json /nonexistent-dir/sim.json >/dev/null 2>"$tmp/err"; then
  echo "FAIL: an unwritable --json path was accepted"; fail=1
fi
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "--json" "$tmp/err" || { echo "FAIL: unwritable --json: $(cat "$tmp/err")"; fail=1; }

# help: the suite's names the command; the command's names its flags
"$micro" --help >"$tmp/help" 2>&1 && grep -q -- "--prefix-sim PRESET" "$tmp/help" || { echo "FAIL: micro --help lacks --prefix-sim"; fail=1; }
"$micro" --prefix-sim --help >"$tmp/simhelp" 2>&1 || { echo "FAIL: micro --prefix-sim --help exited non-zero"; fail=1; }
for flag in --requests --shared-prefix --document-tokens --suffix-tokens --output-tokens --passes --concurrency \
            --policy --hash --sweep shared-prefix cliff custom; do
  grep -q -- "$flag" "$tmp/simhelp" || { echo "FAIL: micro --prefix-sim --help does not document $flag"; fail=1; }
done

# the cliff: pass 2 of 64 documents into the 400,032-token cache hits no block (CSV: pass, blocks_hit, hit_rate_pct)
"$micro" --prefix-sim cliff --format csv >"$tmp/cliff.csv" 2>"$tmp/err" || { echo "FAIL: cliff exited non-zero: $(cat "$tmp/err")"; fail=1; }
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
         $col["pass"] == 2 { seen = 1; if ($col["blocks_hit"] != 0 || $col["hit_rate_pct"] + 0 != 0) bad = 1 }
         END { exit !(seen && !bad) }' "$tmp/cliff.csv" || { echo "FAIL: cliff pass 2 is not 0 hits:"; cat "$tmp/cliff.csv"; fail=1; }
"$micro" --prefix-sim shared-prefix --json "$tmp/sim.json" >/dev/null 2>&1 && grep -q '"prefix_sim"' "$tmp/sim.json" ||
  { echo "FAIL: --json of the shared-prefix preset"; fail=1; }
"$micro" --prefix-sim cliff --requests 8 --sweep --hash xxhash_cbor --format markdown >"$tmp/sweep.md" 2>&1 &&
  grep -q "capacity cliff" "$tmp/sweep.md" || { echo "FAIL: --sweep printed no cliff table"; cat "$tmp/sweep.md"; fail=1; }

# the hash cases are host-only: they run (and verify) where there is no GPU
"$micro" --filter '^prefix/hash/xxhash_cbor/bs16/prompt16k/t1$' --quick --json "$tmp/host.json" >"$tmp/host.txt" 2>&1 ||
  { echo "FAIL: a host-only case did not run without a GPU:"; tail -5 "$tmp/host.txt"; fail=1; }
grep -Eq '"verified":[[:space:]]*1' "$tmp/host.json" 2>/dev/null || { echo "FAIL: the host-only case's result is not verified"; fail=1; }

if [ "$fail" -ne 0 ]; then echo "prefix_sim_cli: FAILED"; exit 1; fi
echo "prefix_sim_cli: all checks passed"
