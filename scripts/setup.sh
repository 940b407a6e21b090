#!/usr/bin/env bash
# scripts/setup.sh: the README's first command. On a fresh Debian machine it installs what is
# missing, configures and builds fa4sim and its Python module (Release, CUDA backend when nvcc is
# found), then runs the main job: `fa4sim report --out fa4sim-report`.
#   Environment: FA4SIM_BUILD_DIR (default build), FA4SIM_NO_REPORT=1 to skip the report,
#                FA4SIM_CMAKE_ARGS for extra CMake arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FA4SIM_BUILD_DIR:-build}

# clang-format-14: ctest clang_format checks the tree's layout with that version (it skips without it).
debs=(build-essential cmake git pkg-config libcli11-dev libfmt-dev libeigen3-dev libboost-dev
      nlohmann-json3-dev libgtest-dev libbenchmark-dev python3 python3-dev python3-pip python3-numpy
      python3-matplotlib python3-mpmath python3-venv clang-format-14)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The python3 on PATH may not be Debian's (pyenv, venv): give it numpy, matplotlib, ml_dtypes and
# mpmath (the cross-check scripts' needs), nanobind (to build the Python module `import fa4sim`)
# and pytest (its tests) from PyPI when it lacks them.
py_missing=()
# (scikit-build-core: the wheel test builds `pip wheel .` without build isolation.)
for m in numpy matplotlib ml_dtypes mpmath nanobind pytest scikit_build_core; do
  python3 -c "import $m" 2>/dev/null || py_missing+=("${m//_/-}")
done
# A numpy already there stays as it is: the newest ml_dtypes would pull numpy 2 over Debian's
# numpy 1.24, and Debian's matplotlib (built against 1.x) then fails to import.
keep=()
np_version=$(python3 -c "import numpy; print(numpy.__version__)" 2>/dev/null) && keep+=("numpy==$np_version")
if ((${#py_missing[@]})); then
  echo "setup: pip-installing ${py_missing[*]} for $(command -v python3)"
  python3 -m pip install -q "${py_missing[@]}" "${keep[@]}" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "${py_missing[@]}" "${keep[@]}" ||
    echo "setup: warning: could not install ${py_missing[*]}; tests that need them will skip"
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release ${FA4SIM_CMAKE_ARGS:-}
# The CLI and the Python module (target fa4sim_setup); the test executables and benchmarks are
# built by the test command's first test, build_tests (Note [Tests built by ctest] in
# tests/CMakeLists.txt), or by `cmake --build "$build"`.
cmake --build "$build" -j"$(nproc)" --target fa4sim_setup
if [ "${FA4SIM_NO_REPORT:-0}" != 1 ]; then
  "$build/fa4sim" report --out fa4sim-report
fi
