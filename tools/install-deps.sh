#!/usr/bin/env bash
# Installs the Debian packages flashkm needs, only those missing (used by `make demo` / `make test`).
set -euo pipefail
packages=(
  cmake make g++ pkg-config       # build
  libhwy-dev                      # Google Highway: SIMD kernels with run-time dispatch
  libomp-14-dev clang             # OpenMP for clang (the ThreadSanitizer build) and its archer tool
  libgtest-dev libbenchmark-dev   # GoogleTest, Google Benchmark
  zlib1g-dev                      # reading Fashion-MNIST's .gz files
  libopenblas-dev                 # sgemm ceiling in the benchmarks
  dataset-fashion-mnist           # the real data set of the demo and the tests
  python3-dev python3-venv        # the Python package (built in a virtual environment)
  libcli11-dev                    # CLI11: the command line of the flashkm tool
  nlohmann-json3-dev              # nlohmann::json: every JSON the command writes
  openmpi-bin libopenmpi-dev      # the MPI engine and its tests under mpirun
  chromium                        # headless rendering of the HTML report in its test
  debootstrap                     # the clean Debian 12 root that `make test-wheel` installs the wheel in
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
