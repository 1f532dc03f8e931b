#!/bin/sh
# Usage: check.sh CXX FLAGS... -- compiles uses_core.cc (must compile) and uses_cpu.cc (must
# fail for want of the CPU header) with the core room's include root given in FLAGS.
set -u
dir=$(dirname "$0")
"$@" "$dir/uses_core.cc" || { echo "FAIL: the core's own headers do not compile in the core room"; exit 1; }
if out=$("$@" "$dir/uses_cpu.cc" 2>&1); then
  echo "FAIL: a CPU backend header compiled in the core room"
  exit 1
fi
echo "$out" | grep -q "cpu/cpu_engine.hpp: No such file" || { echo "FAIL: unexpected error: $out"; exit 1; }
# The include roots cannot stop an include by relative path ("../cpu/..."), nor one that names
# another room's header from the room's own directory: no file of src/core may name one.
core="$dir/../../../src/core"
if bad=$(grep -nE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](\.\./|\./\.\./|cpu/|cuda/|distributed/|io/)' "$core"/*.cc "$core"/*.hpp); then
  echo "FAIL: src/core includes another room's header: $bad"
  exit 1
fi
echo "ok: src/core sees its own headers and no CPU header"
