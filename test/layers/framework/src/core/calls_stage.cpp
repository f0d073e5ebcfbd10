// A fixture for scripts/check-layers.py (unit.layers_selftest): core/ includes nothing of the
// stage layer but declares a function only stage/ defines and calls it, a call up the ladder
// the check must name. Never compiled.
namespace lengen {

void run_stage_thing(int steps);

int count_steps() {
  run_stage_thing(3);
  return 3;
}

}  // namespace lengen
