#!/usr/bin/env bash
# Static SASS opcode counts of the kernels in a CUDA object or binary whose (mangled) names match a regex:
# one line per kernel with its instruction count and its opcodes (the mnemonic before the first '.', and
# IMAD.MOV apart, since it is a register move), most frequent first. Needs cuobjdump (the CUDA toolkit).
# Usage: sass-opcodes.sh FILE NAME_REGEX [OPCODE_REGEX]
#   FILE: an object or binary (disassembled by cuobjdump -sass), or a .sass file holding that text already
#   OPCODE_REGEX: only these opcodes in the list (e.g. 'IMAD.MOV|MOV|LDSM|HMMA'); default all
set -uo pipefail
[ $# -ge 2 ] || { echo "usage: sass-opcodes.sh FILE NAME_REGEX [OPCODE_REGEX]" >&2; exit 2; }
file=$1 re=$2 ops=${3:-}
[ -f "$file" ] || { echo "sass-opcodes: $file: no such file" >&2; exit 2; }
dump() {
  case "$file" in
  *.sass) cat "$file" ;;
  *) command -v cuobjdump >/dev/null || { echo "sass-opcodes: cuobjdump not found" >&2; exit 2; }
     cuobjdump -sass "$file" ;;
  esac
}
dump | awk -v re="$re" -v ops="$ops" '
  function flush() {
    if (fn != "" && fn ~ re) {
      line = sprintf("%s [%s]: %d instructions;", fn, arch, total)
      n = 0
      for (o in cnt) { keys[++n] = o }
      # most frequent first (insertion sort: a kernel has a few dozen opcodes)
      for (i = 2; i <= n; i++) { k = keys[i]; j = i - 1; while (j > 0 && (cnt[keys[j]] < cnt[k] || (cnt[keys[j]] == cnt[k] && keys[j] > k))) { keys[j + 1] = keys[j]; j-- } keys[j + 1] = k }
      for (i = 1; i <= n; i++) if (ops == "" || keys[i] ~ ("^(" ops ")$")) line = line sprintf(" %s %d", keys[i], cnt[keys[i]])
      print line
      delete keys
    }
    delete cnt; total = 0
  }
  /arch = sm_/ { a = $0; sub(/.*arch = /, "", a); arch = a }
  /Function : / { flush(); fn = $3 }
  /^ +\/\*[0-9a-f]+\*\/ / {
    ins = $0; sub(/^ +\/\*[0-9a-f]+\*\/ +/, "", ins); sub(/^@!?U?P[0-9T] +/, "", ins)
    split(ins, w, /[ ;]/); op = w[1]
    if (op !~ /^IMAD\.MOV/) sub(/\..*/, "", op); else op = "IMAD.MOV"
    if (op == "" || op == "NOP") next
    cnt[op]++; total++
  }
  END { flush() }'
