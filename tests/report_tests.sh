#!/usr/bin/env bash
# The report tool on recorded and synthetic result files: compare ratios (a file against itself is
# 1.00 everywhere; the synthetic half-bandwidth card is 2.00x time, 0.50x GB/s, the same share of its
# own ceiling; rows more than 3% apart flagged with the measured GPU state), tables, plot with and
# without gnuplot, predict from params files, and every malformed input -> exit 2 with one line on
# stderr. Usage: report_tests.sh REPORT_BINARY FIXTURES_DIR
set -u
report="$1"
fx="$2/runs"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bad() { echo "FAIL: $*"; fail=1; }

expect_error() { # description, then the arguments: exit 2, one stderr line
  local what="$1"; shift
  "$report" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$? lines
  lines=$(wc -l <"$tmp/err")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ]; then
    bad "($what) report $* -> exit $rc, $lines stderr line(s):"; cat "$tmp/err"
  fi
}

# Values of the named CSV columns of compare's output, one row per line, tab-separated, with the note.
csv_columns() { # file, then column names
  local file="$1"; shift
  awk -F, -v want="$*" 'NR == 1 { n = split(want, w, " "); for (i = 1; i <= NF; i++) col[$i] = i; next }
    { line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? "\t" : "") $(col[w[j]]); print line }' "$file"
}

# ---- help
"$report" --help >"$tmp/help" || bad "--help exited non-zero"
for word in compare tables techniques plot predict --format --out --model --prefix-sim --scaling; do
  grep -q -- "$word" "$tmp/help" || bad "--help does not mention $word"
done

# ---- version: one line of the build's facts
"$report" --version >"$tmp/version" 2>&1 || bad "--version exited non-zero"
[ "$(wc -l <"$tmp/version")" -eq 1 ] || bad "--version printed $(wc -l <"$tmp/version") lines"
for word in "report (kvmicro) revision" "build, CUDA architectures" "Google Benchmark"; do
  grep -q -- "$word" "$tmp/version" || bad "--version lacks '$word': $(cat "$tmp/version")"
done

# ---- compare a file with itself: every ratio 1.00, nothing unmatched
"$report" compare "$fx/h200-sample.json" "$fx/h200-sample.json" --format csv >"$tmp/self.csv" || bad "self compare failed"
rows=$(csv_columns "$tmp/self.csv" case | grep -c .)
[ "$rows" -ge 1 ] || bad "self compare printed no rows"
csv_columns "$tmp/self.csv" case time_ratio gbps_ratio share_ratio note |
  awk -F'\t' '{ for (i = 2; i <= 4; i++) if ($i != "" && $i != "1.00") { print "FAIL: " $1 " ratio " $i; bad = 1 }
               if ($2 == "") { print "FAIL: " $1 " has no time ratio"; bad = 1 }
               if ($5 != "") { print "FAIL: " $1 " note " $5; bad = 1 } } END { exit bad }' || fail=1
"$report" compare "$fx/h200-sample.json" "$fx/h200-sample.json" >"$tmp/self.md" || bad "self compare (markdown) failed"
grep -q "Every case is in both files" "$tmp/self.md" || bad "self compare lists unmatched cases"
grep -E '^\| roofline/' "$tmp/self.md" | grep -vq '1\.00' && bad "a markdown row of the self compare lacks 1.00"

# ---- the synthetic half-bandwidth card against the H200 sample
"$report" compare "$fx/h200-sample.json" "$fx/synthetic-older-card.json" --format csv >"$tmp/old.csv" || bad "compare failed"
csv_columns "$tmp/old.csv" case time_ratio gbps_ratio share_ratio a_pct_of_ceiling b_pct_of_ceiling note |
  awk -F'\t' '$7 == "" { n++
      if ($2 != "2.00" || $3 != "0.50" || $4 != "1.00") { print "FAIL: " $1 " ratios " $2 " " $3 " " $4; bad = 1 }
      if ($5 == "" || $5 != $6) { print "FAIL: " $1 " shares of own ceiling " $5 " vs " $6; bad = 1 } }
    END { if (n < 1) { print "FAIL: no matched rows"; bad = 1 } exit bad }' || fail=1
grep -q '^roofline,roofline/sm_write,.*only in A' "$tmp/old.csv" || bad "csv lacks the A-only row"
grep -q '^roofline,roofline/synthetic_only,.*only in B' "$tmp/old.csv" || bad "csv lacks the B-only row"
"$report" compare "$fx/h200-sample.json" "$fx/synthetic-older-card.json" >"$tmp/old.md" || bad "compare (markdown) failed"
for text in "NVIDIA H200 (UUID unknown, driver unknown), ceiling 4261 GB/s" "SYNTHETIC half-bandwidth card" "ceiling 2131 GB/s" "% own ceiling" \
            "Cases in only one file" "roofline/sm_write" "roofline/synthetic_only"; do
  grep -qF "$text" "$tmp/old.md" || bad "markdown compare lacks '$text'"
done
"$report" compare "$fx/h200-sample.json" "$fx/synthetic-older-card.json" --format text >"$tmp/old.txt" || bad "text compare failed"
grep -q '^\[roofline\]' "$tmp/old.txt" || bad "text compare lacks the technique heading"
"$report" compare "$fx/h200-sample.json" "$fx/synthetic-older-card.json" --format json >"$tmp/old.json" || bad "json compare failed"
if command -v python3 >/dev/null; then
  python3 - "$tmp/old.json" <<'EOF' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
ok = d["b"]["ceiling_gbps"] * 2 == d["a"]["ceiling_gbps"] and len(d["only_in_one"]) == 2
ok = ok and all(abs(r["time_ratio"] - 2) < 1e-9 and abs(r["gbps_ratio"] - 0.5) < 1e-9 for r in d["matched"])
if not ok: print("FAIL: json compare values"); sys.exit(1)
EOF
fi

# every matched row of the half-bandwidth card is 2x apart: flagged, both states shown, no evidence in
# files that carry no GPU state
csv_columns "$tmp/old.csv" case flag a_state differs note |
  awk -F'\t' '$5 == "" { n++
      if ($2 != "B slower") { print "FAIL: " $1 " not flagged: " $2; bad = 1 }
      if ($3 !~ /no GPU state recorded/ || $4 !~ /no evidence/) { print "FAIL: " $1 " state " $3 " / " $4; bad = 1 } }
    END { if (n < 1) { print "FAIL: no flagged rows"; bad = 1 } exit bad }' || fail=1
# two runs of one card: a row 6% slower with lower clocks and a throttle reason is flagged with them; a
# row 1% apart is not
if command -v python3 >/dev/null; then
  python3 - "$fx/h200-sample.json" "$tmp/state_a.json" "$tmp/state_b.json" <<'EOF' || bad "could not write the state fixtures"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [b for b in d["benchmarks"] if b["kvmicro_name"] in ("roofline/d2d_memcpy", "roofline/sm_copy")]
def state(b, sm, temp, reasons, scale):
    b = dict(b)
    b.update({"gpu_sm_mhz": sm, "gpu_mem_mhz": 3201, "gpu_temp_c": temp, "gpu_power_w": 600, "throttle_reasons": reasons,
              "throttled": 1 if reasons else 0, "median_us": b["median_us"] * scale, "GB/s": b["GB/s"] / scale})
    return b
a = dict(d); a["benchmarks"] = [state(b, 1980, 40, 0, 1.0) for b in rows]
b = dict(d); b["benchmarks"] = [state(rows[0], 1755, 62, 4, 1.06), state(rows[1], 1980, 41, 0, 1.01)]
json.dump(a, open(sys.argv[2], "w")); json.dump(b, open(sys.argv[3], "w"))
EOF
  "$report" compare "$tmp/state_a.json" "$tmp/state_b.json" --format csv >"$tmp/state.csv" || bad "state compare failed"
  grep '^roofline,roofline/d2d_memcpy,' "$tmp/state.csv" | grep -q 'B slower.*SM clock 1980 -> 1755 MHz.*temperature 40 -> 62 C' ||
    bad "the throttled row lacks its measured differences: $(grep d2d_memcpy "$tmp/state.csv")"
  grep '^roofline,roofline/d2d_memcpy,' "$tmp/state.csv" | grep -q 'B throttled (sw_power_cap)' || bad "no throttle reason"
  grep '^roofline,roofline/sm_copy,' "$tmp/state.csv" | grep -q 'slower\|faster' && bad "a row 1% apart is flagged"
  # the same rows from another card and another revision, with a 3% lower copy ceiling: each flagged row
  # names those run-level differences beside its own state
  python3 - "$tmp/state_a.json" "$tmp/state_b.json" "$tmp/state_a2.json" "$tmp/state_c.json" <<'EOF' ||
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
a["context"]["gpu"]["uuid"] = "GPU-aaaaaaaa-1111-2222-3333-444444444444"
g = b["context"]["gpu"]
g["uuid"] = "GPU-bbbbbbbb-1111-2222-3333-444444444444"
b["context"]["build"]["git_revision"] = "0123456789ab"
g["ceiling_gbps"] *= 0.97
for row in a["benchmarks"] + b["benchmarks"]:  # copy rows: as many bytes read as written
    row["bytes_read"] = row["bytes_written"] = 1 << 30
json.dump(a, open(sys.argv[3], "w")); json.dump(b, open(sys.argv[4], "w"))
EOF
    bad "could not write the other-card fixtures"
  "$report" compare "$tmp/state_a2.json" "$tmp/state_c.json" --format csv >"$tmp/state_c.csv" || bad "other-card compare failed"
  line=$(grep '^roofline,roofline/d2d_memcpy,' "$tmp/state_c.csv")
  for text in "another card (UUID " "code revision " " -> 0123456789ab" "copy ceiling "; do
    case "$line" in *"$text"*) ;; *) bad "the other card's flagged row lacks '$text': $line" ;; esac
  done
  grep '^roofline,roofline/sm_copy,' "$tmp/state_c.csv" | grep -q 'another card' && bad "an unflagged row names differences"
fi

# ---- tables of a recorded run
"$report" tables "$fx/h200-sample.json" >"$tmp/tables.md" || bad "tables failed"
for text in "Latency and bandwidth" "roofline/d2d_memcpy" "Per-token bytes" "turboquant_3bit_nc"; do
  grep -qF "$text" "$tmp/tables.md" || bad "tables lacks '$text'"
done
"$report" tables "$fx/h200-sample.json" --format csv | grep -q '^roofline,roofline/sm_copy,' || bad "csv tables lack sm_copy"
# text: the latency table without a GPU, within 120 columns, its long statuses as numbered notes
"$report" tables "$fx/h200-sample.json" --format text >"$tmp/tables.txt" || bad "text tables failed"
wide=$(awk 'length($0) > 120' "$tmp/tables.txt" | head -3)
[ -z "$wide" ] || bad "text tables over 120 columns: $wide"
grep -q '^roofline/sm_copy  ' "$tmp/tables.txt" || bad "text tables lack the roofline/sm_copy row"
grep -q '^notes:$' "$tmp/tables.txt" || bad "text tables have no notes"
if command -v python3 >/dev/null; then
  "$report" tables "$fx/h200-sample.json" --format json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["latency"] and d["bytes"]["rows"] else 1)' ||
    bad "json tables"
fi

# ---- plot without gnuplot: data and script, no images, exit 0
env PATH=/nonexistent "$report" plot "$fx/synthetic-sweeps.json" --out "$tmp/nogp" >"$tmp/nogp.txt" 2>&1 ||
  bad "plot without gnuplot exited non-zero"
grep -q "gnuplot not found" "$tmp/nogp.txt" || bad "plot without gnuplot does not say so"
for f in gather_block_size.dat offload_size.dat offload_scatter_h2d.dat topk_pages.dat quant_formats.dat plots.gp; do
  [ -s "$tmp/nogp/$f" ] || bad "plot without gnuplot did not write $f"
done
ls "$tmp/nogp" | grep -Eq '\.(svg|png|tmp)' && bad "plot without gnuplot left images or temporaries"
# the NHD series: block sizes 1..256 in order; offload: 5 sizes per direction, far_node left out;
# quant: only the head_dim 128 rows, the skipped row left out
bs=$(awk '/^# series 0/ { s = 1; next } /^# series 1/ { s = 0 } s && /^[0-9]/ { printf "%s ", $1 }' "$tmp/nogp/gather_block_size.dat")
[ "$bs" = "1 8 16 32 64 128 256 " ] || bad "gather block sizes: '$bs'"
[ "$(grep -c '^[0-9]' "$tmp/nogp/offload_size.dat")" -eq 10 ] || bad "offload points"
# scattered blocks: a series per method (baselines by their name), far_node left out, the PCIe link and the
# contiguous copy of the same bytes as lines; top-k: the sort baseline a line over pages beside the top-k
grep -q '^# series [0-9]: memcpy_per_block (baseline)$' "$tmp/nogp/offload_scatter_h2d.dat" &&
  grep -q '^# series [0-9]: staging$' "$tmp/nogp/offload_scatter_h2d.dat" || bad "scatter series"
[ "$(grep -c '^[0-9]' "$tmp/nogp/offload_scatter_h2d.dat")" -eq 4 ] || bad "scatter points (far_node kept?)"
grep -q '^# line: PCIe link, each direction 31.5 GB/s$' "$tmp/nogp/offload_scatter_h2d.dat" || bad "scatter: no link line"
grep -q '^# line: contiguous copy of 64 MiB: 24.9 GB/s$' "$tmp/nogp/offload_scatter_h2d.dat" || bad "scatter: no copy line"
grep -q 'with lines dashtype 2 linewidth 1.5 title "PCIe link' "$tmp/nogp/plots.gp" || bad "the link is not drawn"
cub=$(awk '/^# series [0-9]+: cub_sort_topk, 512 rows, k = 128$/ { s = 1; next } /^# series/ { s = 0 }
  s && /^[0-9]/ { printf "%s ", $1 }' "$tmp/nogp/topk_pages.dat")
[ "$cub" = "2048 8192 16384 " ] || bad "top-k: the CUB baseline over pages is '$cub'"
grep -q '^# series [0-9]: radix select, 512 rows, k = 128$' "$tmp/nogp/topk_pages.dat" || bad "top-k series"
# titles name the card and the revision; the quant bars are horizontal, their labels read across
grep -q '"SYNTHETIC sweep card (test fixture, not a measurement), kvmicro revision synthetic0001"' "$tmp/nogp/plots.gp" ||
  bad "titles lack the GPU and revision"
grep -q 'yticlabels(3) with boxxyerror' "$tmp/nogp/plots.gp" && ! grep -q 'rotate' "$tmp/nogp/plots.gp" ||
  bad "quant bars are not horizontal"
grep -q '^1073741824 ' "$tmp/nogp/offload_size.dat" || bad "offload 1GiB point not in bytes"
[ "$(grep -c 'd128"$' "$tmp/nogp/quant_formats.dat")" -eq 4 ] || bad "quant bars"
grep -q 'd64\|d256' "$tmp/nogp/quant_formats.dat" && bad "quant bars kept other head dims"
"$report" plot "$fx/h200-sample.json" --out "$tmp/empty" >"$tmp/empty.txt" || bad "plot of a file without sweeps failed"
grep -q "^gather_block_size: no rows in this file" "$tmp/empty.txt" && grep -q "^decode_context: no rows in this file" "$tmp/empty.txt" ||
  bad "plot of a roofline-only file does not say which charts have no rows"
ls "$tmp/empty" | grep -q '^gather_block_size' && bad "plot of a roofline-only file wrote a gather chart"

# ---- decode step vs context, the technique table as figures, the prefix-cache cliff
env PATH=/nonexistent "$report" plot "$fx/synthetic-decode.json" --prefix-sim "$fx/prefix-sim-cliff.json" --out "$tmp/dec" \
  >"$tmp/dec.txt" 2>&1 || { bad "plot of the decode fixture"; cat "$tmp/dec.txt"; }
series_x() { # file, series title: the x values of that series
  awk -v want="$2" '/^# series [0-9]+: / { t = $0; sub(/^# series [0-9]+: /, "", t); s = (t == want); next }
    s && /^[0-9]/ { printf "%s ", $1 }' "$1"
}
series_y() { awk -v want="$2" '/^# series [0-9]+: / { t = $0; sub(/^# series [0-9]+: /, "", t); s = (t == want); next }
    s && /^[0-9]/ { printf "%s ", $2 }' "$1"; }
d="$tmp/dec/decode_context.dat"
[ "$(series_x "$d" "bf16 gqa32x8")" = "1024 4096 32768 " ] || bad "decode bf16 gqa32x8 contexts: '$(series_x "$d" "bf16 gqa32x8")'"
[ "$(series_x "$d" "fp8_e4m3_tokhead gqa32x8")" = "1024 4096 32768 " ] || bad "decode fp8 series"
[ "$(series_x "$d" "bf16 mha32x32")" = "32768 " ] || bad "decode: the MHA layout is not a series of its own"
# the dashed line: bytes read / the read ceiling (4000 GB/s): 16 x 1024 tokens x 4096 B = 67108864 B -> 16.777216 us
[ "$(series_y "$d" "bf16 gqa32x8 at the read ceiling" | cut -d' ' -f1)" = "16.777216" ] ||
  bad "decode read-ceiling line: '$(series_y "$d" "bf16 gqa32x8 at the read ceiling")'"
grep -q 'q2\|b64\|d256\|gqa16x8' "$d" && bad "decode chart kept a q_len 2, batch 64 or head_dim 256 row"
# a series and its ceiling line share a colour, the ceiling dashed
gp="$tmp/dec/plots.gp"
c1=$(grep -o "linecolor [0-9]* title \"bf16 gqa32x8\"" "$gp" | awk '{ print $2 }')
c2=$(grep -o "linecolor [0-9]* dashtype 4 title \"bf16 gqa32x8 at the read ceiling\"" "$gp" | awk '{ print $2 }')
[ -n "$c1" ] && [ "$c1" = "$c2" ] || bad "decode: the ceiling line's colour '$c2' is not its series' '$c1'"
# technique figures: computed capacity bars (and the 1x line), measured attention steps only
t="$tmp/dec/techniques_capacity.dat"
[ "$(grep -c '\[computed\]"$' "$t")" -eq 3 ] && ! grep -q measured "$t" || bad "technique capacity bars"
grep -q '^8 8 "gqa: mqa \[computed\]"$' "$t" || grep -q ' 8 "gqa: mqa \[computed\]"$' "$t" || bad "mqa capacity bar"
grep -q '^# line: the model as configured (1.00x)$' "$t" || bad "capacity chart lacks the as-configured line"
s="$tmp/dec/techniques_step.dat"
[ "$(grep -c '\[measured\]"$' "$s")" -eq 1 ] && grep -q 'attn/decode/gqa32x8/d128/bf16/b16/ctx32k \[measured\]' "$s" ||
  bad "technique step bars: $(grep -v '^#' "$s")"
# the cliff: both policies over the working set, a line at the capacity, LRU's repeat pass falls to 0 past it
c="$tmp/dec/prefix_cliff.dat"
grep -q "^# series 0: LRU: vLLM's free queue$" "$c" && grep -q '^# series 1: MRU: keep what fitted$' "$c" || bad "cliff series"
grep -q '^# line: working set = cache (1x)$' "$c" || bad "cliff: no capacity line"
awk '/^# series 0/ { s = 1; next } /^# series 1/ { s = 0 } s && /^[0-9]/ { if ($1 < 0.95 && $2 < 90) bad = 1; if ($1 > 1.1 && $2 > 1) bad = 1; n++ }
     END { exit bad || n < 5 }' "$c" || bad "cliff: LRU is not near 100% below the capacity and 0 past it"
grep -q 'set arrow from 1, graph 0 to 1, graph 1' "$gp" || bad "cliff: the capacity line is not drawn"
# every chart written is titled with the card and the revision
charts=$(ls "$tmp/dec" | grep -c '\.dat$')
titled=$(grep -c '^set title .*"SYNTHETIC decode card (test fixture, not a measurement), kvmicro revision synthetic0002' "$gp")
[ "$charts" -eq 4 ] && [ "$titled" -eq "$charts" ] || bad "$charts charts, $titled titled with the GPU and revision"
expect_error "--prefix-sim of a run file" plot "$fx/synthetic-decode.json" --prefix-sim "$fx/h200-sample.json" --out "$tmp/simbad"
[ -e "$tmp/simbad" ] && bad "a bad --prefix-sim file created the folder"
expect_error "--prefix-sim with compare" compare "$fx/h200-sample.json" "$fx/h200-sample.json" --prefix-sim "$fx/prefix-sim-cliff.json"

# ---- compare: which primitives scale with memory bandwidth, with PCIe, or with neither (three made-up cards:
# B has half of A's ceilings and link, C three quarters of A's HBM and A's link)
"$report" compare "$fx/synthetic-scaling-a.json" "$fx/synthetic-scaling-b.json" "$fx/synthetic-scaling-c.json" --format csv \
  >"$tmp/scale3.csv" || bad "compare of three runs failed"
verdict() { awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next } $col["case"] == c { print $col["scales_with"] }' "$1"; }
for pair in syn/copy_bw:"memory bandwidth" syn/read_bw:"memory bandwidth" syn/mixed_bw:"memory bandwidth" syn/h2d_bw:PCIe \
            syn/latency:neither syn/compute:neither syn/host_hash:neither syn/l2:undetermined syn/only_a:undetermined; do
  case_=${pair%%:*} want=${pair#*:}
  got=$(verdict "$tmp/scale3.csv" "$case_")
  [ "$got" = "$want" ] || bad "three cards: $case_ scales with '$got', want '$want'"
done
# each share is of its own card's ceiling: the copy row is 95% on all three, its GB/s halves on B
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next } $col["case"] == "syn/copy_bw" {
    if ($col["r1_share_pct"] != "95.0" || $col["r2_share_pct"] != "95.0" || $col["r3_share_pct"] != "95.0") exit 1
    if ($col["gbps_spread"] != "2.00" || $col["share_spread"] != "1.00") exit 1; found = 1 } END { exit !found }' "$tmp/scale3.csv" ||
  bad "three cards: the copy row's shares or spreads: $(grep syn/copy_bw "$tmp/scale3.csv")"
# two cards with the same link and different HBM: the link row is PCIe-bound, the HBM rows memory-bound
"$report" compare "$fx/synthetic-scaling-a.json" "$fx/synthetic-scaling-c.json" --scaling --format csv >"$tmp/scale2.csv" ||
  bad "compare --scaling of two runs failed"
[ "$(verdict "$tmp/scale2.csv" syn/h2d_bw)" = PCIe ] && [ "$(verdict "$tmp/scale2.csv" syn/copy_bw)" = "memory bandwidth" ] ||
  bad "A vs C: $(cut -d, -f2,11 "$tmp/scale2.csv" | tr '\n' ' ')"
# one card against itself: nothing can be told
"$report" compare "$fx/h200-sample.json" "$fx/h200-sample.json" --scaling --format csv >"$tmp/scaleself.csv" || bad "self --scaling"
awk -F, 'NR > 1 && $1 != "undetermined" { bad = 1 } END { exit bad || NR < 2 }' "$tmp/scaleself.csv" ||
  bad "a card against itself got a verdict other than undetermined"
# markdown of two runs: the B/A tables, then the verdicts; three runs: the verdicts
"$report" compare "$fx/synthetic-scaling-a.json" "$fx/synthetic-scaling-b.json" >"$tmp/scale2.md" || bad "compare md"
grep -q "Matched cases" "$tmp/scale2.md" && grep -q "## Scaling across runs" "$tmp/scale2.md" || bad "two-run markdown lacks a part"
"$report" compare "$fx/synthetic-scaling-a.json" "$fx/synthetic-scaling-b.json" "$fx/synthetic-scaling-c.json" >"$tmp/scale3.md"
grep -q "9 cases: 3 scale with memory bandwidth, 1 with PCIe, 3 with neither, 2 undetermined" "$tmp/scale3.md" ||
  bad "three-run markdown summary: $(grep cases: "$tmp/scale3.md")"
if command -v python3 >/dev/null; then
  "$report" compare "$fx/synthetic-scaling-a.json" "$fx/synthetic-scaling-b.json" "$fx/synthetic-scaling-c.json" --format json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if len(d["runs"]) == 3 and d["runs"][1]["copy_gbps"] == 2000 and len(d["scaling"]) == 9 else 1)' ||
    bad "json of three runs"
fi
expect_error "--scaling with a value" compare "$fx/h200-sample.json" "$fx/h200-sample.json" --scaling=yes

# ---- techniques for another model from the same run, no GPU: an MLA model and a hybrid one
for m in deepseek-v3 nemotron-h-8b; do
  "$report" techniques "$fx/synthetic-decode.json" --model "$m" --format text >"$tmp/tech-$m.txt" 2>"$tmp/tech-$m.err" ||
    bad "techniques --model $m: $(cat "$tmp/tech-$m.err")"
  grep -q "Techniques side by side for $m" "$tmp/tech-$m.txt" || bad "techniques --model $m: wrong title"
  grep -q "Capacity computed for $m" "$tmp/tech-$m.txt" || bad "techniques --model $m: no caption"
done
grep -q '^native  *computed' "$tmp/tech-deepseek-v3.txt" && grep -q 'measured' "$tmp/tech-deepseek-v3.txt" || bad "deepseek-v3 technique table rows"
grep -q 'hybrid_mamba' "$tmp/tech-nemotron-h-8b.txt" || bad "nemotron-h-8b technique table rows"
expect_error "techniques unknown model" techniques "$fx/synthetic-decode.json" --model no-such-model
expect_error "--model with tables" tables "$fx/synthetic-decode.json" --model deepseek-v3

# ---- plot with gnuplot, where it is installed
if command -v gnuplot >/dev/null; then
  "$report" plot "$fx/synthetic-sweeps.json" --out "$tmp/gp" >"$tmp/gp.txt" 2>&1 || { bad "plot with gnuplot"; cat "$tmp/gp.txt"; }
  for stem in gather_block_size offload_size offload_scatter_h2d topk_pages quant_formats; do
    [ -s "$tmp/gp/$stem.svg" ] && [ -s "$tmp/gp/$stem.png" ] || bad "gnuplot did not draw $stem"
  done
  ls "$tmp/gp" | grep -q '\.tmp' && bad "plot left temporaries"
fi

# ---- predict from params files
out=$("$report" predict "$fx/synthetic-params.json" syn/copy 1000000) || bad "predict failed"
echo "$out" | grep -q ': 20.000 us' || bad "predict syn/copy 1e6 bytes: $out"
out=$("$report" predict "$fx/synthetic-params.json" syn/copy 1GiB) || bad "predict 1GiB failed"
echo "$out" | grep -q 'extrapolation' || bad "predict outside the range does not say so"
out=$("$report" predict "$fx/synthetic-params.json" syn/decode batch=16 context=4096) || bad "predict over two axes failed"
echo "$out" | grep -q ': 102.536 us' || bad "predict syn/decode (5 + 2*16 + 0.001*16*4096): $out"
# the params written from the recorded H200 run's degenerate series
out=$("$report" predict "$fx/h200-degenerate-params.json" offload/fit/h2d/pinned 256KiB) || bad "predict on recorded params failed"
echo "$out" | grep -q ': 8.80[0-9] us' || bad "predict offload/fit/h2d/pinned 256KiB: $out"
expect_error "series without fit" predict "$fx/synthetic-params.json" syn/single 4096
expect_error "recorded series without fit" predict "$fx/h200-degenerate-params.json" paged/gather_bulk/hnd 1GiB
grep -q "2 point(s)" "$tmp/err" || bad "the no-fit error does not give the reason: $(cat "$tmp/err")"
expect_error "fit of the wrong type" predict "$fx/synthetic-params.json" syn/bad_coefficient 4096
expect_error "unknown series" predict "$fx/h200-degenerate-params.json" 'offload/h2d/pinned/*' 4096
grep -q "series with a fit: offload/h2d/pinned, offload/fit/h2d/pinned" "$tmp/err" ||
  bad "the unknown-series error does not list the real series: $(cat "$tmp/err")"
expect_error "missing axis" predict "$fx/synthetic-params.json" syn/decode batch=16
grep -q "context=VALUE" "$tmp/err" || bad "the missing-axis error does not name the axis"
expect_error "a kvmicro-params/1 file" predict "$fx/h200-sample-params.json" roofline 4096
expect_error "not a params file" predict "$fx/h200-sample.json" roofline 4096
expect_error "bad byte count" predict "$fx/synthetic-params.json" syn/copy 12XB
expect_error "bad axis value" predict "$fx/synthetic-params.json" syn/decode batch=many context=1

# the examples of reports/PARAMS.md: each "$ report predict ..." line's output is the line after it
top="$2/../.."
awk '/^\$ report predict / { cmd = substr($0, 17); getline want; print cmd "\t" want }' "$top/reports/PARAMS.md" >"$tmp/examples"
[ "$(wc -l <"$tmp/examples")" -ge 2 ] || bad "reports/PARAMS.md has fewer than two predict examples"
while IFS=$'\t' read -r cmd want; do
  # shellcheck disable=SC2086
  got=$(cd "$top" && "$report" predict $cmd 2>&1)
  [ "$got" = "$want" ] || bad "PARAMS.md example 'report predict $cmd' prints '$got', the page says '$want'"
done <"$tmp/examples"
expect_error "a kvmicro-params/1 file (one line)" predict "$fx/h200-sample-params.json" roofline 4096
grep -q "a kvmicro-params/1 file" "$tmp/err" || bad "the /1 refusal does not say it is /1: $(cat "$tmp/err")"

# ---- malformed input files
printf 'not json' >"$tmp/notjson.json"
: >"$tmp/empty.json"
printf '[1, 2]' >"$tmp/array.json"
printf '{"context": {}}' >"$tmp/nobench.json"
printf '{"benchmarks": {}}' >"$tmp/benchobj.json"
printf '{"benchmarks": [{"name": "x", "cpu_time": 1}]}' >"$tmp/notime.json"
printf '{"benchmarks": [{"name": "x", "real_time": 1, "cpu_time": 1, "median_us": "fast"}]}' >"$tmp/strmedian.json"
printf '{"benchmarks": [{"name": "x", "real_time": 1, "cpu_time": 1, "kvmicro_name": 7}]}' >"$tmp/numname.json"
printf '{"benchmarks": [], "context": {"gpu": {"ceiling_gbps": "4 TB/s"}}}' >"$tmp/strceil.json"
printf '{"benchmarks": [], "context": []}' >"$tmp/ctxarray.json"
printf '{"benchmarks": [], "tables": {"bytes": {"rows": [{"a": {}}]}}}' >"$tmp/badrows.json"
for f in notjson empty array nobench benchobj notime strmedian numname strceil ctxarray; do
  expect_error "compare $f" compare "$fx/h200-sample.json" "$tmp/$f.json"
  expect_error "tables $f" tables "$tmp/$f.json"
  expect_error "plot $f" plot "$tmp/$f.json" --out "$tmp/plot-$f"
  [ -e "$tmp/plot-$f" ] && bad "plot of $f created its folder"
done
expect_error "tables with bad stored rows" tables "$tmp/badrows.json"
expect_error "missing file" compare "$fx/h200-sample.json" "$tmp/none.json"

# ---- usage errors
expect_error "no command"
expect_error "unknown command" summarize "$fx/h200-sample.json"
expect_error "unknown option" compare "$fx/h200-sample.json" "$fx/h200-sample.json" --bogus
expect_error "bad format" compare "$fx/h200-sample.json" "$fx/h200-sample.json" --format yaml
expect_error "one file to compare" compare "$fx/h200-sample.json"
expect_error "plot without --out" plot "$fx/synthetic-sweeps.json"
expect_error "--out is a file" plot "$fx/synthetic-sweeps.json" --out "$fx/h200-sample.json"

# ---- scripts/decode-formats.py (the recorded report's format-against-bf16 table) on the synthetic decode run:
# fp8 at 1.45x bf16 on each of its three shapes; a missing file is exit 2
if command -v python3 >/dev/null; then
  df="$(dirname "$0")/../scripts/decode-formats.py"
  python3 "$df" "$fx/synthetic-decode.json" >"$tmp/formats.md" || bad "decode-formats failed"
  [ "$(grep -c '^| fp8_e4m3_tokhead | gqa32x8/d128 | 16 | .* | 1.45x |' "$tmp/formats.md")" -eq 3 ] ||
    bad "decode-formats: want three fp8 rows at 1.45x: $(cat "$tmp/formats.md")"
  grep -q 'fp8_e4m3_tokhead: faster than bf16 at 3 of 3 shapes' "$tmp/formats.md" || bad "decode-formats: no summary line"
  python3 "$df" "$tmp/none.json" 2>/dev/null
  [ $? -eq 2 ] || bad "decode-formats on a missing file: want exit 2"
fi

# ---- scripts/ncu-opcodes.py (per-opcode summary of an Nsight Compute source page) on a four-instruction sample:
# opcodes merged across modifiers and predicates, most executed first, per-N counts; a missing or foreign file is exit 2
if command -v python3 >/dev/null; then
  nop="$(dirname "$0")/../scripts/ncu-opcodes.py"
  python3 "$nop" "$fx/ncu-source-sample.csv" --per 100 >"$tmp/ops.md" || bad "ncu-opcodes failed"
  grep -q '^| FFMA | 2,000 | 20.0 | 76.9% | 50.0% | 0 | selected 25, short_sb 10, wait 5 |$' "$tmp/ops.md" ||
    bad "ncu-opcodes: want FFMA first with 2,000 executed: $(cat "$tmp/ops.md")"
  grep -q '^| LDS | 500 | 5.0 | 19.2% | 50.0% | 250 | short_sb 35, selected 5 |$' "$tmp/ops.md" ||
    bad "ncu-opcodes: want the predicated LDS with its excess wavefronts: $(cat "$tmp/ops.md")"
  grep -q 'warp-level instructions executed: 2,600; PC samples: 80' "$tmp/ops.md" || bad "ncu-opcodes: no totals line"
  python3 "$nop" "$tmp/none.csv" 2>/dev/null
  [ $? -eq 2 ] || bad "ncu-opcodes on a missing file: want exit 2"
  python3 "$nop" "$fx/h200-sample.json" 2>/dev/null
  [ $? -eq 2 ] || bad "ncu-opcodes on a file that is not a source page: want exit 2"
fi

# ---- scripts/sass-opcodes.sh (static opcode counts per kernel) on a two-kernel cuobjdump sample: IMAD.MOV apart from
# IMAD, predicates and modifiers dropped, NOPs not counted, ties by name; the opcode filter; a missing file is exit 2
so="$(dirname "$0")/../scripts/sass-opcodes.sh"
[ "$(bash "$so" "$fx/sass-sample.sass" one)" = "_Z3onePf [sm_90]: 7 instructions; HMMA 2 BRA 1 EXIT 1 IMAD 1 IMAD.MOV 1 LDC 1" ] ||
  bad "sass-opcodes: kernel one: $(bash "$so" "$fx/sass-sample.sass" one)"
[ "$(bash "$so" "$fx/sass-sample.sass" two 'MOV|LDSM')" = "_Z3twoPf [sm_90]: 3 instructions; LDSM 1 MOV 1" ] ||
  bad "sass-opcodes: kernel two, filtered: $(bash "$so" "$fx/sass-sample.sass" two 'MOV|LDSM')"
bash "$so" "$tmp/none.sass" . 2>/dev/null
[ $? -eq 2 ] || bad "sass-opcodes on a missing file: want exit 2"

# ---- scripts/sass-loops.py (static counts of each loop from its backward branch) on a one-loop sample: the loop's
# four instructions without the NOP inside it, the forward branch not a loop, MIN; a missing file or bad MIN is exit 2
if command -v python3 >/dev/null; then
  sl="$(dirname "$0")/../scripts/sass-loops.py"
  out=$(python3 "$sl" "$fx/sass-loop-sample.sass" loop 2)
  [ "$out" = "$(printf '_Z4loopPf: 9 instructions\n  loop 0x20-0x60: 4 instructions; FADD 2 BRA 1 ISETP 1')" ] ||
    bad "sass-loops: want the one loop of 4: $out"
  [ "$(python3 "$sl" "$fx/sass-loop-sample.sass" loop | wc -l)" -eq 1 ] || bad "sass-loops: a loop below MIN 100 listed"
  python3 "$sl" "$tmp/none.sass" . 2>/dev/null
  [ $? -eq 2 ] || bad "sass-loops on a missing file: want exit 2"
  python3 "$sl" "$fx/sass-loop-sample.sass" loop many 2>/dev/null
  [ $? -eq 2 ] || bad "sass-loops with a MIN that is not a number: want exit 2"
fi

# ---- scripts/merge-calls.sh (several h200.sh calls as one folder for record-run.sh): summaries under "call N:",
# numbered commands, the logs of both calls with the earlier one's build.log renamed, the full run's files; a second
# full run, none, an existing OUTDIR, a folder without summary.txt or an odd argument list is exit 2 and no OUTDIR
mc="$(dirname "$0")/../scripts/merge-calls.sh"
mkdir -p "$tmp/mc/c1/l" "$tmp/mc/c2/l"
echo "full run line" >"$tmp/mc/c1/summary.txt"
echo "sanitize line" >"$tmp/mc/c2/summary.txt"
echo '{}' >"$tmp/mc/c1/h200.json"
echo '{}' >"$tmp/mc/c1/h200-params.json"
echo "build one" >"$tmp/mc/c1/l/build.log"
echo "full" >"$tmp/mc/c1/l/full.txt"
echo "build two" >"$tmp/mc/c2/l/build.log"
echo "ERROR SUMMARY: 0 errors" >"$tmp/mc/c2/l/sanitize-memcheck.txt"
(cd "$tmp/mc/c1/l" && tar czf ../logs.tgz build.log full.txt)
(cd "$tmp/mc/c2/l" && tar czf ../logs.tgz build.log sanitize-memcheck.txt)
bash "$mc" "$tmp/mc/out" "$tmp/mc/c1" "h200.sh build full" "$tmp/mc/c2" "h200.sh build sanitize" >/dev/null ||
  bad "merge-calls failed"
[ "$(cat "$tmp/mc/out/summary.txt" 2>/dev/null)" = "$(printf 'call 1:\nfull run line\n\ncall 2:\nsanitize line')" ] ||
  bad "merge-calls: summary.txt: $(cat "$tmp/mc/out/summary.txt" 2>&1)"
[ "$(sed -n 3p "$tmp/mc/out/commands.txt" 2>/dev/null)" = '2. `h200.sh build sanitize`' ] ||
  bad "merge-calls: commands.txt: $(cat "$tmp/mc/out/commands.txt" 2>&1)"
mkdir "$tmp/mc/x" && tar xzf "$tmp/mc/out/logs.tgz" -C "$tmp/mc/x" 2>/dev/null
[ "$(cat "$tmp/mc/x/build.log" "$tmp/mc/x/build-call1.log" "$tmp/mc/x/full.txt" "$tmp/mc/x/sanitize-memcheck.txt" 2>&1)" = \
  "$(printf 'build two\nbuild one\nfull\nERROR SUMMARY: 0 errors')" ] || bad "merge-calls: logs: $(ls "$tmp/mc/x")"
[ -f "$tmp/mc/out/h200.json" ] && [ -f "$tmp/mc/out/h200-params.json" ] || bad "merge-calls: the full run's files missing"
mc_error() { # description, then the arguments: exit 2, one stderr line, no folder left at $tmp/mc/bad
  local what="$1"; shift
  bash "$mc" "$@" >/dev/null 2>"$tmp/mc/err"
  local rc=$?
  [ "$rc" -eq 2 ] && [ "$(wc -l <"$tmp/mc/err")" -eq 1 ] && [ ! -e "$tmp/mc/bad" ] ||
    bad "merge-calls ($what): exit $rc, $(cat "$tmp/mc/err")"
}
cp "$tmp/mc/c1/h200.json" "$tmp/mc/c2/h200.json"
mc_error "two full runs" "$tmp/mc/bad" "$tmp/mc/c1" a "$tmp/mc/c2" b
rm "$tmp/mc/c1/h200.json" "$tmp/mc/c2/h200.json"
mc_error "no full run" "$tmp/mc/bad" "$tmp/mc/c1" a "$tmp/mc/c2" b
mc_error "OUTDIR exists" "$tmp/mc/out" "$tmp/mc/c2" b
mc_error "no summary.txt" "$tmp/mc/bad" "$tmp/mc/x" a
mc_error "a folder without its command" "$tmp/mc/bad" "$tmp/mc/c1" a "$tmp/mc/c2"

[ "$fail" -eq 0 ] && echo "report_tests: all passed"
exit "$fail"
