#!/usr/bin/env python3
"""One line per benchmark row of a micro --json file: name, median us, GB/s, % of ceiling, extra counters
named on the command line, and the error or skip message. Usage: rows.py RUN.json [REGEX] [COUNTER...]"""
import json
import re
import sys

run = json.load(open(sys.argv[1]))
pat = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
extra = sys.argv[3:]
for b in run.get("benchmarks", []):
    name = b.get("name", "")
    if pat and not pat.search(name):
        continue
    if b.get("error_occurred") or b.get("skipped") or b.get("error_message") or b.get("skip_message"):
        print(f"{name[:70]:70s} {b.get('error_message') or b.get('skip_message') or b.get('message', '')}"[:200])
        continue
    cols = [f"{b.get('median_us', 0):10.1f}us", f"{b.get('GB/s', 0):7.0f}GB/s", f"{b.get('pct_of_ceiling', 0):6.1f}%"]
    cols += [f"{c}={b.get(c, float('nan')):.4g}" for c in extra]
    print(f"{name[:70]:70s} " + " ".join(cols))
