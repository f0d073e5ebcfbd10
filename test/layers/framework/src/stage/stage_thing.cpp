// A fixture for scripts/check-layers.py (unit.layers_selftest): what core/calls_stage.cpp
// declares. Never compiled.
namespace lengen {

void run_stage_thing(int steps) {
  (void)steps;
}

}  // namespace lengen
