#include <x>
auto p = dir / "checkpoints" / "step-1.safetensors";
auto q = fmt::format("{}/eval/grid.csv", d);
auto r = dir + "/metrics.jsonl";
