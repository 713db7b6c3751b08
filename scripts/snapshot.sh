#!/usr/bin/env bash
# The committed tree for a call on the GPU machine: `git archive HEAD` into .snap/ (ignored through
# .git/info/exclude) with the revision in .snap/REVISION. The device tool copies the working tree as it is,
# uncommitted edits included, so a recorded run must come from here (scripts/h200.sh's header). Usage:
# scripts/snapshot.sh, then carry [".deps", ".snap"] and run `cd .snap && bash scripts/h200.sh STAGES`.
set -euo pipefail
cd "$(dirname "$0")/.."
rev=$(git rev-parse --short=12 HEAD)
grep -qx '/.snap/' .git/info/exclude 2>/dev/null || echo '/.snap/' >>.git/info/exclude
rm -rf .snap
mkdir .snap
git archive HEAD | tar -x -C .snap
echo "$rev" >.snap/REVISION
dirty=$(git status --porcelain --untracked-files=no | wc -l)
echo "snapshot of $rev in .snap/$([ "$dirty" -gt 0 ] && echo " ($dirty changed files left out: not committed)")"
