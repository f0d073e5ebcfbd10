#pragma once
// A fixture for scripts/check-layers.py (unit.layers_selftest): core/ is the lowest layer, so
// this include breaks the ladder and the check must say so. Never compiled.
#include "lengen/stage/stage.h"
