#!/usr/bin/env bash
# Installs every Debian package that building and testing pipec needs, on a fresh Debian 12 machine.
# Safe to run again: packages already present are skipped quickly.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  antlr4 libantlr4-runtime-dev          # the parser generator (4.7.2) and its C++ runtime (4.9)
  libfmt-dev libgtest-dev googletest    # formatting and the unit-test framework
  libcli11-dev nlohmann-json3-dev       # the command line's flags; JSON (`pipec run --stats-json`, the language server)
  zlib1g-dev libjpeg62-turbo-dev libpng-dev
  llvm-14-dev clang-14 libclang-rt-14-dev   # the JIT, and clang + libFuzzer for the fuzz targets
  clang-format-14                       # scripts/format.sh, scripts/check_format.sh (CI)
  python3 python3-numpy                 # python3-numpy: the C ABI test reads batches through DLPack
  libdnnl-dev                           # oneDNN 2.6 (OpenMP threading): the CPU training kernels
  python3-dev python3-venv              # the Python module (python/): its headers, and the venv below
  openmpi-bin libopenmpi-dev            # Open MPI 4.1: multi_worker() under mpirun (libpipec_mpi.so is built against it)
  iproute2                              # `ip netns`: the two-host MPI test over a veth pair
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Python module's build and tests (python/, tests/python): a venv with nanobind, pytest and numpy from
# PyPI, made from Debian's python3 (whose headers python3-dev installed), and tensorboard, whose reader
# checks `pipec run --logdir`'s event files (tests/train/tensorboard_test.py). scripts/build.sh builds the
# module for it when it is there. PIPEC_VENV moves it.
cd "$(dirname "$0")/.."
venv=${PIPEC_VENV:-build/venv}
# Under sudo, the venv (and build/) belong to the user who ran it, who builds there afterwards.
as_user=()
[ -n "${SUDO_USER:-}" ] && [ "$(id -u)" -eq 0 ] && as_user=(sudo -u "$SUDO_USER")
if ! "$venv/bin/python" -c "import nanobind, pytest, numpy, tensorboard" 2>/dev/null; then
  echo "setup: making the Python venv $venv (nanobind, pytest, numpy, tensorboard)"
  "${as_user[@]}" mkdir -p "$(dirname "$venv")"
  "${as_user[@]}" /usr/bin/python3 -m venv "$venv"
  "${as_user[@]}" "$venv/bin/pip" install -q --disable-pip-version-check "nanobind>=2.0" pytest numpy tensorboard
fi
