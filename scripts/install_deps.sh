#!/usr/bin/env bash
# Installs the Debian 12 packages quantkit needs to build, test, run the examples
# and benchmarks. Idempotent: does nothing when everything is installed.
# As root it runs apt-get; otherwise it prints the command to run and exits 1
# if anything is missing.
set -euo pipefail

# ONNX Runtime for the "peer" tests: npm's onnxruntime-node into tools/ort/node_modules (not an
# apt package; needs node + npm). Never fatal: without node, npm or the registry it warns and the
# peer tests skip. Under sudo it runs as the invoking user (no root-owned files in the checkout).
install_onnxruntime_node() {
  local script as_user=()
  script="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/tools/ort/install.sh"
  if [[ $(id -u) -eq 0 && -n "${SUDO_USER:-}" && "$SUDO_USER" != root ]]; then
    as_user=(sudo -u "$SUDO_USER" -H)
  fi
  "${as_user[@]}" "$script" ||
    echo "install_deps: warning: onnxruntime-node not installed (tools/ort/install.sh failed); the 'peer' tests will skip" >&2
}

packages=(
  build-essential cmake ninja-build clang libclang-rt-14-dev meson pkg-config
  libhwy-dev libeigen3-dev doctest-dev libbenchmark-dev nlohmann-json3-dev
  libcli11-dev libfmt-dev libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  python3 python3-numpy python3-onnx python3-torch python3-sklearn
  chromium
  libopenmpi-dev openmpi-bin
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  if [[ "$status" != "installed" ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_deps: all ${#packages[@]} packages are installed"
  install_onnxruntime_node
  exit 0
fi

echo "install_deps: missing: ${missing[*]}"
cmd=(apt-get install -y --no-install-recommends "${missing[@]}")
if [[ $(id -u) -ne 0 ]]; then
  echo "install_deps: not root; run:" >&2
  echo "  sudo apt-get update && sudo ${cmd[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update
"${cmd[@]}"

# Check again: apt-get may have "succeeded" without installing a package.
still_missing=()
for pkg in "${missing[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || still_missing+=("$pkg")
done
if [[ ${#still_missing[@]} -ne 0 ]]; then
  echo "install_deps: still missing after apt-get: ${still_missing[*]}" >&2
  exit 1
fi
echo "install_deps: installed ${missing[*]}"
install_onnxruntime_node
