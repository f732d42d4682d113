#!/usr/bin/env bash
# Installs every system package edo needs to build, test and run its demo on Debian 12.
# Idempotent: only packages that are missing are installed, and they are listed first.
# Usage: scripts/install-deps.sh [--no-gui] [--no-torch]
set -euo pipefail

want_gui=1
want_torch=1
for arg in "$@"; do
  case "$arg" in
    --no-gui) want_gui=0 ;;
    --no-torch) want_torch=0 ;;
    -h|--help)
      echo "usage: scripts/install-deps.sh [--no-gui] [--no-torch]"
      echo "Installs edo's build and test dependencies with apt-get (Debian 12, as root)."
      exit 0 ;;
    *) echo "install-deps: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake ninja-build ccache pkg-config git
  libsqlite3-dev libsqlitecpp-dev sqlite3
  libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev libeigen3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3
  clang libclang-rt-14-dev libomp-dev   # the libFuzzer targets of tests/fuzz (built with clang)
)
if ((want_gui)); then
  packages+=(qt6-base-dev qt6-charts-dev libqt6opengl6-dev libgl-dev qt6-qpa-plugins)
fi
if ((want_torch)); then
  packages+=(python3-torch python3-numpy python3-venv)   # python3-venv: scripts/torch-venv.sh
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} missing package(s): ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "install-deps: need root to install packages; run as root or install: ${missing[*]}" >&2
    exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
