#!/usr/bin/env bash
# Builds lengen and runs the whole test suite (unit, plugin, contract, integration, extension).
# This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${LENGEN_PRESET:-dev}
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset"
