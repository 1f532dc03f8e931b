#!/usr/bin/env bash
# The wheel of `make wheel` in a clean Debian 12 root: no compiler, no -dev packages, no Highway,
# no OpenMP runtime; only python3, python3-venv, python3-pip and ca-certificates (debootstrap
# minbase). pip installs the wheel (numpy and scikit-learn from PyPI) in a chroot, where a fit
# must equal the same fit by the package built here, the `flashkm` command must give the same
# labels, and `flashkm demo` must run. Needs root (debootstrap, chroot, mount) and the network
# (deb.debian.org, PyPI). The root is kept in build/wheel/debian12 for the next run; delete it to
# start from scratch. Usage: tests/wheel/check_wheel.sh WHEEL HOST_PYTHON
# (HOST_PYTHON: an interpreter with the locally built flashkm, numpy and scikit-learn installed),
# or tests/wheel/check_wheel.sh --prepare: the root and its venv only (the network's part, run
# while the wheel builds), then exit.
set -euo pipefail
prepare=0
if [ "${1:-}" = "--prepare" ]; then
  prepare=1
else
  [ $# -eq 2 ] || { echo "usage: $0 WHEEL HOST_PYTHON | --prepare" >&2; exit 2; }
  wheel=$(realpath "$1")
  host_python=$2
fi
here=$(dirname "$(realpath "$0")")
root=${FLASHKM_WHEEL_ROOT:-build/wheel/debian12}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The root, once: debootstrap into a temporary folder, renamed when complete, so that an
# interrupted run starts again from scratch instead of using half a root.
if [ ! -e "$root/.flashkm-root-ready" ]; then
  rm -rf "$root.partial"
  mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    bookworm "$root.partial" "$mirror"
  touch "$root.partial/.flashkm-root-ready"
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$root"
  mv "$root.partial" "$root"
fi
root=$(realpath "$root")

cleanup() { umount "$root/proc" 2>/dev/null || true; }
trap cleanup EXIT
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# pip in the root trusts what pip trusts here (a network whose HTTPS proxy has its own CA).
cp "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$root/etc/host-ca-certificates.crt"
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/opt/venv/bin:/usr/bin:/bin LANG=C.UTF-8 \
    PIP_CERT=/etc/host-ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"
}

# What the wheel must bring itself: the root has none of these.
for f in gcc g++ cc c++; do
  if in_root sh -c "command -v $f" >/dev/null; then echo "FAIL: the clean root has $f" >&2; exit 1; fi
done
if ls "$root"/usr/lib/x86_64-linux-gnu/ | grep -qE '^lib(hwy|gomp)'; then
  echo "FAIL: the clean root has libhwy or libgomp" >&2; exit 1
fi

# A virtual environment with numpy and scikit-learn, kept with the root.
if [ ! -e "$root/opt/venv/.flashkm-venv-ready" ]; then
  rm -rf "$root/opt/venv"
  in_root python3 -m venv /opt/venv
  in_root pip install -q numpy scikit-learn
  touch "$root/opt/venv/.flashkm-venv-ready"
fi
if [ "$prepare" = 1 ]; then
  echo "clean Debian 12 root ready: $root"
  exit 0
fi

work=$root/flashkm-check
rm -rf "$work" && mkdir -p "$work"
cp "$wheel" "$here/fit.py" "$work/"
in_root pip install -q --force-reinstall --no-deps "/flashkm-check/$(basename "$wheel")"

# The same fit here, with the locally built package, and in the root.
"$host_python" "$here/fit.py" make "$work"
"$host_python" "$here/fit.py" fit "$work" "$work/host.npz"
in_root python /flashkm-check/fit.py fit /flashkm-check /flashkm-check/root.npz

# The command, from the root's PATH (the wheel's scripts), on the same data from the same init.
in_root flashkm --help >/dev/null
in_root flashkm info --targets
in_root flashkm fit /flashkm-check/X.npy --init /flashkm-check/init.npy -o /flashkm-check/cmd_centroids.npy \
  --labels /flashkm-check/cmd_labels.npy --quiet
"$host_python" "$here/fit.py" compare "$work"

# The demo, as shipped (Fashion-MNIST is not installed in the root, so the generated blobs only).
in_root flashkm demo --quiet | tee "$work/demo.txt"
grep -q "inertia .* after .* iterations" "$work/demo.txt" || { echo "FAIL: no inertia line from flashkm demo" >&2; exit 1; }
echo "PASS: $(basename "$wheel") in a clean Debian 12 root"
