#!/usr/bin/env bash
# Builds lengen and runs the whole test suite (unit, plugin, contract, integration, extension).
# This is the README's test command and what CI runs. It installs what it needs first
# (scripts/setup.sh, idempotent: a no-op when everything is there), so it works on its own on
# a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
preset=${LENGEN_PRESET:-dev}
cmake --preset "$preset"
cmake --build --preset "$preset"
ctest --preset "$preset"
