#!/usr/bin/env bash
# Installs ONNX Runtime for Node (npm onnxruntime-node, pinned in tools/ort/package.json and
# package-lock.json) into tools/ort/node_modules (git-ignored), for tools/ort/run_model.mjs and
# the "peer" ctest tests.
#
# --ignore-scripts: the package ships its CPU library (bin/napi-v6/<os>/<arch>/); its install
# script only downloads GPU parts. Idempotent: does nothing when the pinned version is there.
# Exit status: 0 installed (or already there), 1 node/npm missing or npm failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(sed -n 's/.*"onnxruntime-node": *"\([^"]*\)".*/\1/p' "$here/package.json")
pkg="$here/node_modules/onnxruntime-node"

installed_version() {
  [[ -f "$pkg/package.json" ]] || return 0
  node -e 'process.stdout.write(require(process.argv[1]).version)' "$pkg/package.json" 2>/dev/null || true
}

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "tools/ort/install.sh: '$tool' not found; install Node.js (>= 18) and npm to run ONNX Runtime" >&2
    exit 1
  fi
done

if [[ "$(installed_version)" != "$version" ]] || ! node -e "require('$pkg')" >/dev/null 2>&1; then
  # npm ci when the lock file is there (exact versions), npm install otherwise (writes it).
  npm_cmd=(install)
  [[ -f "$here/package-lock.json" ]] && npm_cmd=(ci)
  echo "tools/ort/install.sh: npm ${npm_cmd[*]} --ignore-scripts (onnxruntime-node@$version) in $here"
  if ! (cd "$here" && npm "${npm_cmd[@]}" --ignore-scripts --no-audit --no-fund); then
    echo "tools/ort/install.sh: npm ${npm_cmd[*]} failed (no network or registry?)" >&2
    exit 1
  fi
  if [[ "$(installed_version)" != "$version" ]] || ! node -e "require('$pkg')" >/dev/null 2>&1; then
    echo "tools/ort/install.sh: onnxruntime-node $version does not load after npm ${npm_cmd[*]}" >&2
    exit 1
  fi
fi

ort_version=$(node -e "process.stdout.write(require('$pkg').env.versions.node || '?')")
echo "tools/ort/install.sh: onnxruntime-node $ort_version in $pkg"
