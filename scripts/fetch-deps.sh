#!/usr/bin/env bash
# The Debian packages the GPU machine lacks (cJSON, xxHash, OpenSSL's development files, ccache and its libhiredis),
# downloaded on this machine into .deps/ (ignored through .git/info/exclude) for the device tool to carry:
# scripts/h200.sh unpacks them there into a private prefix. Usage: scripts/fetch-deps.sh (needs apt-get's lists).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.deps/' .git/info/exclude 2>/dev/null || echo '/.deps/' >>.git/info/exclude
mkdir -p .deps
cd .deps
apt-get download libcjson1 libcjson-dev libxxhash0 libxxhash-dev libssl3 libssl-dev ccache libhiredis0.14
ls -l
