// The `abc` scheme: biases materialised from a calibration file per head, rows by absolute
// position (KV cache), right-anchored lines at each sample's last real key, layer selection,
// refusals. (The line arithmetic itself: test_lines.cpp; the pipeline end to end:
// test/integration/test_abc_pipeline.cpp.)
#include "helpers.h"
#include "lines.h"

using lengen::test::make_scheme;
namespace abc = lengen::abc;

namespace {

lengen::SchemeContext ctx(int64_t heads) {
  lengen::SchemeContext c;
  c.d_model = 8 * heads;
  c.heads = heads;
  c.head_dim = 8;
  c.layers = 2;
  return c;
}

lengen::AttentionContext call(
    lengen::AttentionKind kind, int64_t layer, int64_t offset, int64_t T, int64_t S) {
  lengen::AttentionContext a;
  a.kind = kind;
  a.layer = layer;
  a.query_offset = a.cache_offset = offset;
  a.query_length = T;
  a.key_length = S;
  a.query_ids = torch::zeros({1, 1, T}, torch::kLong);
  a.key_ids = torch::zeros({1, 1, S}, torch::kLong);
  return a;
}

}  // namespace

TEST_CASE("abc: the bias of each head is its calibrated lines, extended", "[abc]") {
  const std::string file = lengen::test::synthetic_calibration(2);
  auto s = make_scheme("{name: abc, bias: '" + file + "'}", ctx(2));
  auto lines = lengen::load_safetensors(file);
  auto cross = abc::from_tensors("cross", lines.tensors);
  auto self = abc::from_tensors("self", lines.tensors);
  auto b = s->additive_bias(call(lengen::AttentionKind::kCross, 0, 0, 7, 9));
  REQUIRE(b.sizes() == torch::IntArrayRef({1, 2, 7, 9}));
  for (int64_t h = 0; h < 2; ++h) {
    CHECK(torch::equal(b[0][h], abc::extend(cross.heads[h], 0, 7, 9).to(torch::kFloat32)));
  }
  // Rows are absolute: a decoding step at row 4 is row 4 of the full matrix.
  auto step = s->additive_bias(call(lengen::AttentionKind::kCross, 1, 4, 1, 9));
  CHECK(torch::equal(step[0].select(1, 0), b[0].select(1, 4)));
  auto sb = s->additive_bias(call(lengen::AttentionKind::kCausalSelf, 0, 0, 6, 6));
  CHECK(torch::equal(sb[0][1], abc::extend(self.heads[1], 0, 6, 6, true).to(torch::kFloat32)));
  // Encoder self-attention is left alone.
  CHECK(!s->additive_bias(call(lengen::AttentionKind::kBidirectionalSelf, 0, 0, 5, 5)).defined());
  // Only the layers asked for.
  auto one = make_scheme("{name: abc, layers: [1], bias: '" + file + "'}", ctx(2));
  CHECK(!one->additive_bias(call(lengen::AttentionKind::kCross, 0, 0, 3, 9)).defined());
  CHECK(one->additive_bias(call(lengen::AttentionKind::kCross, 1, 0, 3, 9)).defined());
  auto no_self = make_scheme("{name: abc, self: false, bias: '" + file + "'}", ctx(2));
  CHECK(!no_self->additive_bias(call(lengen::AttentionKind::kCausalSelf, 0, 0, 3, 3)).defined());
}

TEST_CASE("abc: right-anchored lines align with each sample's last real key", "[abc]") {
  const std::string file = lengen::test::synthetic_calibration(2);
  auto s = make_scheme("{name: abc, bias: '" + file + "'}", ctx(2));
  auto a = call(lengen::AttentionKind::kCross, 0, 0, 5, 9);
  a.key_padding = torch::zeros({2, 9}, torch::kBool);
  a.key_padding[1].narrow(0, 6, 3).fill_(true);  // sample 1 has 6 real keys
  auto batch = s->additive_bias(a);              // [2, H, 5, 9]
  REQUIRE(batch.sizes() == torch::IntArrayRef({2, 2, 5, 9}));
  auto alone9 = s->additive_bias(call(lengen::AttentionKind::kCross, 0, 0, 5, 9));
  auto alone6 = s->additive_bias(call(lengen::AttentionKind::kCross, 0, 0, 5, 6));
  CHECK(torch::equal(batch[0], alone9[0]));
  CHECK(torch::equal(batch[1].narrow(2, 0, 6), alone6[0]));
  CHECK(torch::isinf(batch[1].narrow(2, 6, 3)).all().item<bool>());
}

TEST_CASE("abc: a missing or mismatched file is refused naming it", "[abc]") {
  // Built before the calibrate stage ran (experiment validation): fails at first use.
  auto s = make_scheme("{name: abc, bias: /nonexistent/abc.safetensors}", ctx(2));
  CHECK_THROWS_WITH(
      s->additive_bias(call(lengen::AttentionKind::kCross, 0, 0, 2, 3)),
      Catch::Contains("/nonexistent/abc.safetensors") && Catch::Contains("calibrate"));
  CHECK_THROWS_WITH(
      make_scheme("{name: abc, bias: '" + lengen::test::synthetic_calibration(3) + "'}", ctx(2)),
      Catch::Contains("3 heads") && Catch::Contains("has 2"));
  // Relative paths are read from the run directory.
  lengen::test::TempDir dir;
  std::filesystem::create_directories(dir.path / "stages" / "calibrate");
  std::filesystem::copy_file(lengen::test::synthetic_calibration(2),
                             dir.file("stages/calibrate/abc.safetensors"));
  auto c = ctx(2);
  c.run_dir = dir.str();
  auto rel = make_scheme("abc", c);
  CHECK(rel->additive_bias(call(lengen::AttentionKind::kCross, 0, 0, 2, 3)).defined());
}

TEST_CASE("abc: a per-layer calibration gives each decoder layer its own bias", "[abc]") {
  // Layer 0 gets the synthetic file's lines, layer 1 the same with the two heads swapped.
  const auto shared = lengen::load_safetensors(lengen::test::synthetic_calibration(2)).tensors;
  std::vector<std::pair<std::string, torch::Tensor>> per_layer;
  for (const auto& [name, t] : shared) {
    per_layer.emplace_back("layer0." + name, t);
    per_layer.emplace_back(
        "layer1." + name,
        name.size() > 5 && name.substr(name.size() - 5) == ".info" ? t : t.flip({0}));
  }
  lengen::test::TempDir dir;
  const std::string file = dir.file("per_layer.safetensors");
  lengen::save_safetensors(file, per_layer);
  auto s = make_scheme("{name: abc, bias: '" + file + "'}", ctx(2));
  auto cross = abc::from_tensors("cross", shared);
  auto self = abc::from_tensors("self", shared);
  auto b0 = s->additive_bias(call(lengen::AttentionKind::kCross, 0, 0, 7, 9));
  auto b1 = s->additive_bias(call(lengen::AttentionKind::kCross, 1, 0, 7, 9));
  for (int64_t h = 0; h < 2; ++h) {
    CHECK(torch::equal(b0[0][h], abc::extend(cross.heads[h], 0, 7, 9).to(torch::kFloat32)));
    CHECK(torch::equal(b1[0][h], abc::extend(cross.heads[1 - h], 0, 7, 9).to(torch::kFloat32)));
  }
  CHECK(!torch::equal(b0, b1));
  auto s1 = s->additive_bias(call(lengen::AttentionKind::kCausalSelf, 1, 0, 6, 6));
  CHECK(torch::equal(s1[0][0], abc::extend(self.heads[1], 0, 6, 6, true).to(torch::kFloat32)));
  // A model deeper than the calibrated one has no bias for its third layer.
  CHECK_THROWS_WITH(s->additive_bias(call(lengen::AttentionKind::kCross, 2, 0, 7, 9)),
                    Catch::Contains("per_layer.safetensors") && Catch::Contains("layer 2") &&
                        Catch::Contains("2 layers"));
  // A file with both kinds of bias is ambiguous.
  auto both = per_layer;
  both.insert(both.end(), shared.begin(), shared.end());
  const std::string mixed = dir.file("both.safetensors");
  lengen::save_safetensors(mixed, both);
  CHECK_THROWS_WITH(make_scheme("{name: abc, bias: '" + mixed + "'}", ctx(2)),
                    Catch::Contains("per-layer"));
}
