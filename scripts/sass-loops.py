#!/usr/bin/env python3
"""Static SASS instruction counts of the loops in the kernels of a `cuobjdump -sass` listing whose (mangled)
names match a regex: one line per kernel (its instruction count), then one per loop of more than MIN
instructions (a backward branch and the instructions from its target up to it), with the loop's opcodes (the
mnemonic before the first '.'), most frequent first, ties by name; NOPs are not counted (as in sass-opcodes.sh).
Loops nest: an outer loop's count includes the inner ones; out-of-line code that branches back into the body (a
BRA.DIV fallback at the kernel's end) shows as a loop spanning most of the kernel.
Usage: sass-loops.py FILE.sass NAME_REGEX [MIN (default 100)]"""
import re
import sys
from collections import Counter


def opcode(text):
    words = text.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    try:
        listing = open(argv[1]).read()
    except OSError as e:
        print(f"sass-loops: {argv[1]}: {e.strerror}", file=sys.stderr)
        return 2
    name_re = re.compile(argv[2])
    try:
        least = int(argv[3]) if len(argv) > 3 else 100
    except ValueError:
        print(f"sass-loops: MIN must be an integer, not '{argv[3]}'", file=sys.stderr)
        return 2
    for fn in re.split(r"\n\s*Function : ", listing)[1:]:
        name = fn.split("\n", 1)[0].strip()
        if not name_re.search(name):
            continue
        ins = [(int(m.group(1), 16), m.group(2).strip()) for m in re.finditer(r"/\*([0-9a-f]{4,})\*/\s+([^;]*);", fn)]
        ins = [(a, t) for a, t in ins if opcode(t) != "NOP"]
        print(f"{name}: {len(ins)} instructions")
        for addr, text in ins:
            m = re.search(r"\bBRA\s+(0x[0-9a-f]+)", text)
            if not m or int(m.group(1), 16) >= addr:
                continue
            start = int(m.group(1), 16)
            body = [t for a, t in ins if start <= a <= addr]
            if len(body) <= least:
                continue
            ops = sorted(Counter(opcode(t) for t in body).items(), key=lambda kv: (-kv[1], kv[0]))
            print(f"  loop {start:#x}-{addr:#x}: {len(body)} instructions; " + " ".join(f"{o} {n}" for o, n in ops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
