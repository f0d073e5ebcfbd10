#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install dependencies, build, run the quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset dev -DLENGEN_BUILD_TESTS=OFF
cmake --build --preset dev
exec build/dev/bin/lengen run experiments/quickstart.yaml "$@"
