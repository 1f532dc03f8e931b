#!/usr/bin/env bash
# flashkm beside its peers on the shared harness (../shared/bench), in one run: machine limits,
# then every peer on the same data, initial centroids and 2 threads. Peers from PyPI are
# installed into the project's virtual environment (build/venv, made by `make test-python`).
# Writes bench/results/{limits,peers}.json and .md; then `python bench/plot_peers.py`.
# Usage: bash bench/run_peers.sh [extra peers.py arguments]   (~25-35 min on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=build/venv
[ -x $VENV/bin/python ] || make $VENV/bin/python
$VENV/bin/pip install -q ".[test]" faiss-cpu scikit-learn-intelex superkmeans \
  opencv-python-headless scipy matplotlib
# A private copy of the shared harness: limits.py builds its STREAM program next to itself.
H=build/harness
rm -rf $H && cp -r ../shared/bench $H && chmod -R u+w $H
mkdir -p bench/results
export PYTHONPATH="$PWD/bench${PYTHONPATH:+:$PYTHONPATH}"
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $VENV/bin/python $H/limits.py --out bench/results/limits.json
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $VENV/bin/python $H/peers.py \
  --shapes "${SHAPES:-50000x16x16,100000x128x1024,200000x768x256,1000000x32x256}" \
  --fmnist 10,256 --iters 10 --budget 45 \
  --peers faiss,faiss_default,sklearn_lloyd,sklearn_elkan,cv2 \
  --contender flashkm --contender sklearnex.cluster:KMeans \
  --contender peer_adapters:SuperKMeansExact \
  --out bench/results/peers.json --limits bench/results/limits.json "$@"
$VENV/bin/python $H/report.py bench/results/peers.json bench/results/limits.json > bench/results/peers.md
