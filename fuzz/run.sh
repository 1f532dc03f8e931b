#!/usr/bin/env bash
# Builds the src/io libFuzzer targets with clang++ into BUILD_DIR, writes a small seed corpus
# for each, and runs every target for a bounded time; exits non-zero if any target fails.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
cxx=${FUZZ_CXX:-clang++}
seconds=${FUZZ_SECONDS:-20}
jobs=$(nproc)
targets=(fuzz_npy_header fuzz_npy_file fuzz_vecs fuzz_csv)

# --- build: the library sources instrumented for coverage, each target linked with libFuzzer.
san=(-fsanitize=address,undefined -fno-sanitize-recover=undefined)
cflags=(-std=c++20 -O1 -g -fno-omit-frame-pointer "${san[@]}" -I"$root/src" -I"$root/include")
rm -rf "$out/obj"
mkdir -p "$out/obj"
printf '%s\n' "$root"/src/io/*.cc | xargs -P "$jobs" -I{} sh -c \
  "$cxx ${cflags[*]} -fsanitize=fuzzer-no-link -c {} -o $out/obj/\$(basename {} .cc).o"
printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} sh -c \
  "$cxx ${cflags[*]} -fsanitize=fuzzer $root/fuzz/{}.cc $out/obj/*.o -o $out/{}"

# --- seeds: small valid files of each format, written here so a fresh clone needs nothing else.
byte() { printf "\\x$(printf %02x "$1")"; }
le32() { for shift in 0 8 16 24; do byte $(($1 >> shift & 255)); done; }
fill() { head -c "$1" /dev/zero | tr '\0' '\77'; }  # n bytes of 0x3f: finite in every dtype
# npy_header VERSION DICT: magic, version, header length and the dict padded like numpy does.
npy_header() {
  local pre=$(($1 == 1 ? 10 : 12)) len=$((${#2} + 1))
  local pad=$(((64 - (pre + len) % 64) % 64))
  printf '\x93NUMPY'; byte "$1"; byte 0
  if [[ $1 == 1 ]]; then
    byte $(((len + pad) & 255))
    byte $(((len + pad) >> 8))
  else
    le32 $((len + pad))
  fi
  printf '%s%*s\n' "$2" "$pad" ''
}
seeds=$out/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{fuzz_npy_header,fuzz_npy_file,fuzz_vecs,fuzz_csv}
npy_seeds=(
  "1;{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), };24"
  "2;{'descr': '>f8', 'fortran_order': True, 'shape': (2, 3), };48"
  "3;{'descr': '<f2', 'fortran_order': True, 'shape': (4, 2), };16"
  "1;{'descr': '|u1', 'fortran_order': False, 'shape': (5, 3), };15"
  "1;{'shape': (6,), \"descr\": '=f4', 'fortran_order': False};24"
  "1;{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), };0"
)
i=0
for s in "${npy_seeds[@]}"; do
  IFS=';' read -r version dict nbytes <<<"$s"
  { npy_header "$version" "$dict"; fill "$nbytes"; } >"$seeds/fuzz_npy_file/$i.npy"
  { npy_header "$version" "$dict"; le32 "$nbytes"; } >"$seeds/fuzz_npy_header/$i"
  i=$((i + 1))
done
{ le32 3; fill 12; le32 3; fill 12; } >"$seeds/fuzz_vecs/two_records"
{ le32 1; fill 4; le32 1; fill 4; le32 1; fill 4; } >"$seeds/fuzz_vecs/dim1"
{ le32 8; fill 8; le32 8; fill 8; } >"$seeds/fuzz_vecs/bvecs_like"
printf '1,2,3\n4,5,6\n' >"$seeds/fuzz_csv/plain"
printf 'x,y\r\n1.5, -2e3\r\n+7,\t8\r\n\r\n' >"$seeds/fuzz_csv/header_crlf"
printf 'nan,inf\n-inf,1e-300\n' >"$seeds/fuzz_csv/special"

# --- run: each target from its seeds for a bounded time, as many at once as there are cores.
run_one() {
  local t=$1 extra=()
  [[ $t == fuzz_npy_* ]] && extra=(-dict="$root/fuzz/npy.dict")
  rm -rf "$out/corpus/$t"
  mkdir -p "$out/corpus/$t"
  "$out/$t" "$out/corpus/$t" "$seeds/$t" "${extra[@]}" -max_total_time="$seconds" \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$out/$t-" \
    >"$out/$t.log" 2>&1
}
status=0
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if ((${#pids[@]} >= jobs)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || status=1; done

for t in "${targets[@]}"; do
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log")
  if grep -qE '^==[0-9]+==ERROR|^SUMMARY|deadly signal|Test unit written' "$out/$t.log"; then
    echo "$t: FAILED after ${execs:-?} runs; see $out/$t.log"
    grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$out/$t.log" | head -5
    status=1
  else
    echo "$t: ok, ${execs:-?} runs in ${seconds}s"
  fi
done
exit "$status"
