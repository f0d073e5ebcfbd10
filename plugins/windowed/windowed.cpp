// Windowed attention bias (Duan & Shi 2023, section 4.1 and A.4; after Beltagy et al. 2020):
// a {0, -inf} bias that leaves each query a window of keys by position ID.
//   decoder self-attention:  open iff 0 <= p_i - p_j <= w   (the diagonal and w keys below it)
//   cross-attention:         open iff |p_i - p_j| <= w      (w on both sides)
//   encoder self-attention:  open iff |p_i - p_j| <= w      (off by default, as in the paper)
// p is one level of the task's IDs. With significance IDs (seq2seq_arithmetic: the target token
// predicting y_r and the source digits x_r, a_r, b_r all carry ID r) the cross window is the
// paper's anti-diagonal band, spanning and stepping over two positions for an interleaved
// input, whatever the padding. `units: tokens` reads the paper's "w positions to both left and
// right" literally instead: cross-attention opens the query's own digits (the keys with its ID:
// one for unary input, the pair a_r b_r interleaved) and w source tokens on each side, 2 + 2w
// keys for a pair where `units: ids` opens 2 + 4w. `cross_band: released` is the authors'
// released code instead (generate_cross_attention_mask: the band's right half is commented out
// and the source ends in EOS): row r opens the IDs r - 1 .. r - 1 + w, for w = 1 the query's own
// digit and the one below it, which the previous row consumed (ID 0, the EOS there, is absent
// here). A row with no open key opens its nearest keys (never all -inf).
// Hooks: additive bias, remembered per set of positions. KV cache: rows by ID, nothing to do.
#include "lengen/core/error.h"
#include "lengen/plugin/plugin.h"
#include "lengen/position/memo.h"
#include "lengen/position/scheme.h"

#include <limits>

namespace {

using lengen::AttentionKind;
using lengen::OptionSpec;

class Windowed final : public lengen::PositionScheme {
 public:
  static lengen::ComponentSpec spec() {
    return {
        "position",
        "windowed",
        "windowed attention bias (Duan & Shi 2023): each query sees the keys within w position IDs "
        "(below it in decoder self-attention, on both sides in cross-attention)",
        {OptionSpec::integer("window", "w: keys within w IDs of the query stay open")
             .with_default(int64_t{1})
             .at_least(0),
         OptionSpec::integer("level", "the level of the task's IDs to read")
             .with_default(int64_t{0})
             .at_least(0),
         OptionSpec::boolean("self", "bias decoder (causal) self-attention").with_default(true),
         OptionSpec::boolean("cross", "bias cross-attention").with_default(true),
         OptionSpec::boolean("encoder",
                             "bias encoder (bidirectional) self-attention; the paper leaves it "
                             "unbiased")
             .with_default(false),
         OptionSpec::string(
             "units",
             "what w counts in cross-attention: ids (w position IDs on each side; an "
             "interleaved pair a_r b_r then sees 2 + 4w keys) or tokens (the keys with "
             "the query's ID and w source tokens on each side: 2 + 2w keys for a pair)")
             .with_default(std::string("ids"))
             .one_of({"ids", "tokens"}),
         OptionSpec::string("cross_band",
                            "the cross-attention band: paper (w IDs on both sides of the "
                            "query's, the paper's text) or released (IDs r - 1 .. r - 1 + w "
                            "for row r, the authors' released code; units: ids only)")
             .with_default(std::string("paper"))
             .one_of({"paper", "released"})}};
  }

  Windowed(const lengen::Options& o, const lengen::SchemeContext& ctx)
      : window_(o.get_int("window")),
        level_(o.get_int("level")),
        self_(o.get_bool("self")),
        cross_(o.get_bool("cross")),
        encoder_(o.get_bool("encoder")),
        tokens_(o.get_string("units") == "tokens"),
        released_(o.get_string("cross_band") == "released") {
    if (released_ && tokens_) {
      o.fail("cross_band",
             "the released code's band counts IDs; use units: ids with cross_band: released");
    }
    if (level_ >= ctx.position_levels) {
      o.fail("level",
             fmt::format("the task emits {} level(s) of position IDs", ctx.position_levels));
    }
  }

  uint32_t hooks() const override { return lengen::kHookAdditiveBias; }

  bool supports(AttentionKind) const override { return true; }

  torch::Tensor additive_bias(const lengen::AttentionContext& ctx) override {
    const bool on = ctx.kind == AttentionKind::kCausalSelf ? self_
                    : ctx.kind == AttentionKind::kCross    ? cross_
                                                           : encoder_;
    if (!on)
      return {};
    return bias_.get(
        ctx,
        [&] {
          const bool causal = ctx.kind == AttentionKind::kCausalSelf;
          auto d =
              ctx.query_ids[level_].unsqueeze(2) - ctx.key_ids[level_].unsqueeze(1);  // [B|1, T, S]
          auto open = causal ? (d >= 0).logical_and(d <= window_)
                      : released_ && ctx.kind == AttentionKind::kCross
                          ? (d <= 1).logical_and(d >= 1 - window_)
                          : d.abs() <= window_;
          if (tokens_ && ctx.kind == AttentionKind::kCross) {
            // The columns of the keys with the query's ID, widened by w columns on each side.
            const int64_t S = d.size(-1);
            auto own = d == 0;
            auto col = torch::arange(S, d.options()).view({1, 1, S}).expand_as(d);
            auto first = col.masked_fill(own.logical_not(), S + window_).amin(-1, /*keepdim=*/true);
            auto last = col.masked_fill(own.logical_not(), -1 - window_).amax(-1, /*keepdim=*/true);
            open = (col >= first - window_)
                       .logical_and(col <= last + window_)
                       .logical_and(own.any(-1, true));
          }
          // Rows without an open key open the nearest visible ones, so softmax stays finite.
          auto dist = d.abs();
          if (causal)
            dist = dist.masked_fill(d < 0, std::numeric_limits<int64_t>::max());
          auto nearest = dist == std::get<0>(dist.min(-1, /*keepdim=*/true));
          open = open.logical_or(nearest.logical_and(open.any(-1, /*keepdim=*/true).logical_not()));
          return torch::zeros(open.sizes(), d.options().dtype(torch::kFloat32))
              .masked_fill_(open.logical_not(), -std::numeric_limits<float>::infinity())
              .unsqueeze(1);  // [B|1, 1, T, S]
        },
        static_cast<int64_t>(ctx.kind));
  }

 private:
  int64_t window_, level_;
  bool self_, cross_, encoder_, tokens_, released_;
  lengen::PositionMemo<> bias_;
};

void register_windowed(lengen::Registrar& r) {
  r.add_position<Windowed>();
}

}  // namespace

LENGEN_PLUGIN("windowed", "0.1.0", register_windowed)
