#!/usr/bin/env python3
"""The decode step of each quantized KV format against bf16's at the same shape, from a recorded run:
for every attn/decode/<layout>/<format>/bB/ctxC row (default kernels, no variant suffix) that has a bf16
row of the same layout and shape, the speed-up (bf16 time / format time), and the fastest row of the same
step with another kernel (a register-pipeline variant: pfN, otN, cM, w, pair) of that format and shape. Prints markdown. Usage: scripts/decode-formats.py RUN.json"""
import json
import re
import sys

FORMATS = ["fp8_e4m3_tokhead", "fp8_e4m3_tensor", "fp8_e5m2_tokhead", "int3_g32", "turboquant3"]
# suffixes of rows that run the same step with another kernel (depth, O^T, register cap, unpacking, pairs)
KERNEL_VARIANT = re.compile(r"^(pf\d|ot\d)(c\d)?w?$|^pair$")
ROW = re.compile(r"^attn/decode/(?P<layout>[a-z0-9]+/d\d+)/(?P<fmt>[a-z0-9_]+)/b(?P<b>\d+)/ctx(?P<c>\d+k)(?:/(?P<var>.+))?$")


def main(path):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError) as e:
        print(f"decode-formats: {path}: {e}", file=sys.stderr)
        return 2
    rows = {}
    for b in doc.get("benchmarks", []):
        name = b.get("kvmicro_name", "")
        m = ROW.match(name)
        if not m or b.get("run_type") != "iteration" or "median_us" not in b or b.get("error_occurred"):
            continue
        rows[name] = (m, b["median_us"], b.get("pct_of_ceiling"))
    out = []
    for name, (m, us, pct) in sorted(rows.items(), key=lambda kv: (kv[1][0]["fmt"], int(kv[1][0]["b"]), int(kv[1][0]["c"][:-1]))):
        if m["var"] or m["fmt"] not in FORMATS:
            continue
        base = rows.get(f"attn/decode/{m['layout']}/bf16/b{m['b']}/ctx{m['c']}")
        if not base:
            continue
        variants = [(v_us, v_name) for v_name, (vm, v_us, _) in rows.items()
                    if vm["var"] and KERNEL_VARIANT.match(vm["var"]) and vm["fmt"] == m["fmt"]
                    and vm["layout"] == m["layout"] and vm["b"] == m["b"] and vm["c"] == m["c"]]
        best = min(variants) if variants else None
        fp8 = rows.get(f"attn/decode/{m['layout']}/fp8_e4m3_tokhead/b{m['b']}/ctx{m['c']}")
        out.append((m, us, pct, base[1], best, fp8[1] if fp8 and m["fmt"] in ("int3_g32", "turboquant3") else None))
    if not out:
        print("No quantized decode row has a bf16 row of the same shape in this run.")
        return 0
    print("| format | layout | batch | context | step us | bf16 step us | speed-up vs bf16 | vs fp8 e4m3 per token-head "
          "| % of read ceiling | fastest kernel variant row (speed-up vs bf16) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for m, us, pct, bf16, best, fp8 in out:
        bv = f"`{best[1].split('/')[-1]}` {best[0]:.1f} us ({bf16 / best[0]:.2f}x)" if best else "-"
        share = f"{pct:.1f}" if isinstance(pct, (int, float)) else "-"
        vs8 = f"{fp8 / us:.2f}x" if fp8 else "-"
        print(f"| {m['fmt']} | {m['layout']} | {m['b']} | {m['c']} | {us:.1f} | {bf16:.1f} | {bf16 / us:.2f}x | {vs8} | {share} "
              f"| {bv} |")
    print()
    for fmt in FORMATS:
        sel = [(bf16 / us, m) for m, us, _, bf16, _, _ in out if m["fmt"] == fmt]
        if not sel:
            continue
        lo, hi = min(sel, key=lambda x: x[0]), max(sel, key=lambda x: x[0])
        faster = sum(1 for s, _ in sel if s > 1.0)
        text = (f"- {fmt}: faster than bf16 at {faster} of {len(sel)} shapes; "
                f"{lo[0]:.2f}x (b{lo[1]['b']} x {lo[1]['c']}) to {hi[0]:.2f}x (b{hi[1]['b']} x {hi[1]['c']})")
        v8 = [fp8 / us for m, us, _, _, _, fp8 in out if m["fmt"] == fmt and fp8]
        if v8:
            text += f"; against fp8 e4m3 per token-head {min(v8):.2f}x to {max(v8):.2f}x"
        print(text + ".")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
