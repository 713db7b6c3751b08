#!/usr/bin/env python3
"""Per-opcode summary of one kernel's Nsight Compute source page.

Input: the CSV that `ncu -i REPORT --page source --csv --print-source sass` writes (one row per SASS
instruction, with "Instructions Executed", "Warp Stall Sampling (All Samples)" and the stall_* columns).
Output: one table row per opcode (the mnemonic before its first '.'), most executed first: warp-level
instructions executed, their share, the share of the PC samples taken on them, shared-memory excess
wavefronts (bank conflicts) and the three stall reasons sampled most on them. With --per N the executed
count is also given per N (e.g. per warp tile, when the caller knows how many there were).

Usage: scripts/ncu-opcodes.py SOURCE.csv [--top K] [--per N]
"""
import argparse
import collections
import csv
import sys


def number(cell):
    try:
        return float(cell.replace(",", ""))
    except (AttributeError, ValueError):
        return 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--per", type=float, default=0.0)
    a = ap.parse_args()
    try:
        with open(a.csv, newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        print(f"ncu-opcodes: {a.csv}: {e}", file=sys.stderr)
        return 2
    # the first row names the kernel; the header is the first row that has an "Address" column
    head = next((i for i, r in enumerate(rows) if r and r[0] == "Address"), None)
    if head is None:
        print(f"ncu-opcodes: {a.csv}: no 'Address' header row (not a --page source --csv export)", file=sys.stderr)
        return 2
    col = {name: i for i, name in enumerate(rows[head])}
    for need in ("Source", "Instructions Executed", "Warp Stall Sampling (All Samples)"):
        if need not in col:
            print(f"ncu-opcodes: {a.csv}: no '{need}' column", file=sys.stderr)
            return 2
    stall_cols = [n for n in rows[head] if n.startswith("stall_") and "Not Issued" not in n]
    executed, samples, excess = collections.Counter(), collections.Counter(), collections.Counter()
    stalls = collections.defaultdict(collections.Counter)
    for r in rows[head + 1:]:
        if len(r) < len(rows[head]):
            continue
        words = r[col["Source"]].split()
        if not words:
            continue
        op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
        op = op.split(".")[0]
        executed[op] += number(r[col["Instructions Executed"]])
        samples[op] += number(r[col["Warp Stall Sampling (All Samples)"]])
        if "L1 Wavefronts Shared Excessive" in col:
            excess[op] += number(r[col["L1 Wavefronts Shared Excessive"]])
        for n in stall_cols:
            stalls[op][n[len("stall_"):]] += number(r[col[n]])
    total, total_samples = sum(executed.values()), sum(samples.values())
    if total <= 0:
        print(f"ncu-opcodes: {a.csv}: no instruction was executed", file=sys.stderr)
        return 2
    kernel = rows[0][1] if rows and len(rows[0]) > 1 else "?"
    print(f"kernel: {kernel}")
    print(f"warp-level instructions executed: {total:,.0f}; PC samples: {total_samples:,.0f}")
    per = f" | per {a.per:,.0f}" if a.per else ""
    print(f"| opcode | executed{per} | share | share of samples | shared excess wavefronts | top stalls (samples) |")
    print("|---|---:|" + ("---:|" if a.per else "") + "---:|---:|---:|---|")
    for op, n in executed.most_common(a.top):
        top = ", ".join(f"{k} {v:,.0f}" for k, v in stalls[op].most_common(3) if v > 0)
        per_cell = f" {n / a.per:,.1f} |" if a.per else ""
        share_s = 100 * samples[op] / total_samples if total_samples else 0.0
        print(f"| {op} | {n:,.0f} |{per_cell} {100 * n / total:.1f}% | {share_s:.1f}% | {excess[op]:,.0f} | {top} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
