#!/usr/bin/env bash
# `cmake --install` of a build: micro and report in bin/ (and they run from there), README.md and
# reports/PARAMS.md in share/doc/kvmicro. Usage: install_tests.sh BUILD_DIR
set -u
build="$1"
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/log" 2>&1 || { echo "FAIL: cmake --install:"; cat "$tmp/log"; exit 1; }
for f in bin/micro bin/report share/doc/kvmicro/README.md share/doc/kvmicro/PARAMS.md; do
  [ -s "$tmp/prefix/$f" ] || { echo "FAIL: $f not installed"; fail=1; }
done
for tool in micro report; do
  "$tmp/prefix/bin/$tool" --version | grep -q "^$tool (kvmicro) revision" || { echo "FAIL: installed $tool --version"; fail=1; }
done
if [ "$fail" -ne 0 ]; then echo "install_tests: FAILED"; exit 1; fi
echo "install_tests: all checks passed"
