// A fixture for scripts/check-layers.py: a higher layer including a lower one is fine.
#include "lengen/core/error.h"
