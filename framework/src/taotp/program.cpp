#include "lengen/taotp/program.h"

#include "lengen/config/node.h"
#include "lengen/core/error.h"
#include "lengen/experiment/experiment.h"
#include "lengen/registry/registry.h"

#include <torch/torch.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>

namespace lengen::taotp {

namespace {

// ---------------------------------------------------------------------------------------
// A Python-literal parser: the subset `ast.literal_eval` accepts for numeric programs.

struct Literal {
  enum Kind { kDict, kList, kNumber, kString, kBool, kNone } kind = kNone;
  double number = 0;
  std::string text;
  std::vector<Literal> items;                              // kList
  std::vector<std::pair<std::string, Literal>> fields;     // kDict, in file order
  int line = 0, column = 0;

  const Literal* field(const std::string& key) const {
    for (const auto& [k, v] : fields) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

class Parser {
 public:
  Parser(const std::string& text, std::string source) : s_(text), source_(std::move(source)) {}

  Literal parse() {
    Literal v = value();
    skip();
    if (i_ < s_.size()) fail("unexpected text after the program");
    return v;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(fmt::format("{}:{}:{}: {}", source_, line_, column_, what));
  }

 private:
  void advance() {
    if (s_[i_] == '\n') {
      ++line_;
      column_ = 1;
    } else {
      ++column_;
    }
    ++i_;
  }

  void skip() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        advance();
      } else if (s_[i_] == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') advance();
      } else {
        break;
      }
    }
  }

  bool accept(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) {
      advance();
      return true;
    }
    return false;
  }

  Literal value() {
    skip();
    if (i_ >= s_.size()) fail("unexpected end of the program, expected a value");
    Literal v;
    v.line = line_;
    v.column = column_;
    const char c = s_[i_];
    if (c == '{') {
      advance();
      v.kind = Literal::kDict;
      while (!accept('}')) {
        skip();
        if (i_ >= s_.size() || (s_[i_] != '"' && s_[i_] != '\'')) fail("expected a quoted key or '}'");
        std::string key = string_body();
        if (!accept(':')) fail(fmt::format("expected ':' after the key '{}'", key));
        v.fields.emplace_back(key, value());
        if (!accept(',')) {
          if (!accept('}')) fail("expected ',' or '}' in a dict");
          break;
        }
      }
    } else if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      advance();
      v.kind = Literal::kList;
      while (!accept(close)) {
        v.items.push_back(value());
        if (!accept(',')) {
          if (!accept(close)) fail(fmt::format("expected ',' or '{}' in a list", close));
          break;
        }
      }
    } else if (c == '"' || c == '\'') {
      v.kind = Literal::kString;
      v.text = string_body();
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      std::string word;
      while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_')) {
        word += s_[i_];
        advance();
      }
      if (word == "True" || word == "true" || word == "False" || word == "false") {
        v.kind = Literal::kBool;
        v.number = (word == "True" || word == "true") ? 1 : 0;
      } else if (word == "None" || word == "null") {
        v.kind = Literal::kNone;
      } else {
        line_ = v.line;
        column_ = v.column;
        fail(fmt::format("unexpected name '{}' (a program holds only numbers, lists, dicts and "
                         "strings)", word));
      }
    } else {
      v.kind = Literal::kNumber;
      v.number = number();
    }
    return v;
  }

  std::string string_body() {
    const char quote = s_[i_];
    advance();
    std::string out;
    while (i_ < s_.size() && s_[i_] != quote) {
      if (s_[i_] == '\n') fail("unterminated string");
      if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
        advance();
        const char e = s_[i_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += s_[i_];
      }
      advance();
    }
    if (i_ >= s_.size()) fail("unterminated string");
    advance();
    return out;
  }

  double number() {
    // [+-]? (digits [. digits?] | . digits) ([eE] [+-]? digits)?, as Python writes floats.
    const size_t start = i_;
    auto digits = [&] {
      size_t n = 0;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
        advance();
        ++n;
      }
      return n;
    };
    if (s_[i_] == '+' || s_[i_] == '-') advance();
    size_t n = digits();
    if (i_ < s_.size() && s_[i_] == '.') {
      advance();
      n += digits();
    }
    if (n == 0) {
      i_ = start;
      fail(fmt::format("expected a number, found '{}'", s_.substr(start, 12)));
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      advance();
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) advance();
      if (digits() == 0) fail("expected digits after the exponent");
    }
    return std::strtod(s_.substr(start, i_ - start).c_str(), nullptr);
  }

  const std::string& s_;
  std::string source_;
  size_t i_ = 0;
  int line_ = 1, column_ = 1;
};

// ---------------------------------------------------------------------------------------
// Literals to tensors, with shape checks that name the array.

std::string where(const std::string& source, const Literal& v) {
  return fmt::format("{}:{}:{}", source, v.line, v.column);
}

// Shape of a rectangular nested list of numbers; fails on ragged or non-numeric entries.
void collect(const Literal& v, size_t depth, std::vector<int64_t>& shape, std::vector<double>& out,
             const std::string& name, const std::string& source) {
  if (v.kind == Literal::kNumber || v.kind == Literal::kBool) {
    if (depth != shape.size()) {
      throw Error(fmt::format("{}: {}: a number where a list was expected (nesting depth {} of {})",
                              where(source, v), name, depth, shape.size()));
    }
    out.push_back(v.number);
    return;
  }
  if (v.kind != Literal::kList) {
    throw Error(fmt::format("{}: {}: expected numbers and lists", where(source, v), name));
  }
  if (depth == shape.size()) {
    if (!out.empty()) {
      throw Error(fmt::format("{}: {}: a list where a number was expected", where(source, v), name));
    }
    shape.push_back(static_cast<int64_t>(v.items.size()));
  } else if (shape[depth] != static_cast<int64_t>(v.items.size())) {
    throw Error(fmt::format("{}: {}: a row of {} entries where the others have {} (arrays must be "
                            "rectangular)",
                            where(source, v), name, v.items.size(), shape[depth]));
  }
  for (const auto& item : v.items) {
    collect(item, depth + 1, shape, out, name, source);
  }
}

torch::Tensor to_tensor(const Literal& v, const std::string& name, const std::string& source) {
  if (v.kind == Literal::kNumber || v.kind == Literal::kBool) {
    return torch::tensor(v.number, torch::kFloat64);  // scalar
  }
  std::vector<int64_t> shape;
  std::vector<double> values;
  collect(v, 0, shape, values, name, source);
  if (values.empty()) {
    // [] or [[], []]: the empty array of the listed outer sizes (the innermost is 0).
    std::vector<int64_t> sizes;
    for (int64_t s : shape) sizes.push_back(s);
    return torch::zeros(sizes, torch::kFloat64);
  }
  return torch::tensor(values, torch::kFloat64).view(shape).clone();
}

std::string shape_str(const torch::Tensor& t) { return fmt::format("[{}]", fmt::join(t.sizes(), ", ")); }

void expect_shape(const torch::Tensor& t, const std::vector<int64_t>& shape, const std::string& name,
                  const std::string& source, const Literal* at) {
  if (t.sizes() != torch::IntArrayRef(shape)) {
    throw Error(fmt::format("{}: {} has shape {}, expected [{}]",
                            at ? where(source, *at) : source, name, shape_str(t),
                            fmt::join(shape, ", ")));
  }
}

LayerNormParams layer_norm_params(const Literal* v, const std::string& name, int64_t C,
                                  const std::string& source) {
  LayerNormParams p{torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
  if (!v) return p;
  if (v->kind != Literal::kDict) {
    throw Error(fmt::format("{}: {} must be a dict {{\"gamma\": ..., \"beta\": ...}}", where(source, *v), name));
  }
  for (const auto& [key, value] : v->fields) {
    if (key != "gamma" && key != "beta") {
      throw Error(fmt::format("{}: {}: unknown key '{}'{}; expected gamma and beta",
                              where(source, value), name, key, did_you_mean(key, {"gamma", "beta"})));
    }
    auto t = to_tensor(value, name + "." + key, source);
    if (t.dim() > 1 || (t.dim() == 1 && t.size(0) != C)) {
      throw Error(fmt::format("{}: {}.{} has shape {}, expected a scalar or [{}]", where(source, value),
                              name, key, shape_str(t), C));
    }
    (key == "gamma" ? p.gamma : p.beta) = t;
  }
  return p;
}

}  // namespace

Program parse_program(const std::string& text, const std::string& source) {
  Parser parser(text, source);
  Literal root = parser.parse();
  if (root.kind != Literal::kDict) {
    throw Error(fmt::format("{}: a program is a dict {{\"tok_emb\": ..., \"pos_emb\": ..., ...}}",
                            where(source, root)));
  }
  const std::vector<std::string> known{"tok_emb", "pos_emb", "out_emb", "layers", "lnf"};
  for (const auto& [key, value] : root.fields) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw Error(fmt::format("{}: unknown key '{}'{}; a program has {}", where(source, value), key,
                              did_you_mean(key, known), join(known)));
    }
  }
  auto required = [&](const char* key) -> const Literal& {
    const Literal* v = root.field(key);
    if (!v) throw Error(fmt::format("{}: the program has no '{}'", source, key));
    return *v;
  };
  Program p;
  const Literal& tok = required("tok_emb");
  p.tok_emb = to_tensor(tok, "tok_emb", source);
  if (p.tok_emb.dim() != 2 || p.tok_emb.size(0) < 1 || p.tok_emb.size(1) < 1) {
    throw Error(fmt::format("{}: tok_emb has shape {}, expected [vocab_size, d_model] with both >= 1",
                            where(source, tok), shape_str(p.tok_emb)));
  }
  const int64_t V = p.vocab_size(), C = p.d_model();
  const Literal& pos = required("pos_emb");
  p.pos_emb = to_tensor(pos, "pos_emb", source);
  if (p.pos_emb.dim() != 2 || p.pos_emb.size(1) != C || p.pos_emb.size(0) < 1) {
    throw Error(fmt::format("{}: pos_emb has shape {}, expected [block_size, {}] (d_model from tok_emb)",
                            where(source, pos), shape_str(p.pos_emb), C));
  }
  if (const Literal* out = root.field("out_emb")) {
    p.out_emb = to_tensor(*out, "out_emb", source);
    expect_shape(p.out_emb, {V, C}, "out_emb", source, out);
  }
  p.lnf = layer_norm_params(root.field("lnf"), "lnf", C, source);

  if (const Literal* layers = root.field("layers")) {
    if (layers->kind != Literal::kList) {
      throw Error(fmt::format("{}: layers must be a list of dicts", where(source, *layers)));
    }
    const std::vector<std::string> layer_keys{"Q", "K", "V", "P", "M1", "b1", "M2", "b2", "ln1", "ln2"};
    for (size_t l = 0; l < layers->items.size(); ++l) {
      const Literal& lv = layers->items[l];
      const std::string lname = fmt::format("layers[{}]", l);
      if (lv.kind != Literal::kDict) {
        throw Error(fmt::format("{}: {} must be a dict", where(source, lv), lname));
      }
      for (const auto& [key, value] : lv.fields) {
        if (std::find(layer_keys.begin(), layer_keys.end(), key) == layer_keys.end()) {
          throw Error(fmt::format("{}: {}: unknown key '{}'{}; a layer has {}", where(source, value), lname,
                                  key, did_you_mean(key, layer_keys), join(layer_keys)));
        }
      }
      auto array = [&](const char* key) -> std::pair<torch::Tensor, const Literal*> {
        const Literal* v = lv.field(key);
        if (!v) return {torch::Tensor(), nullptr};
        return {to_tensor(*v, lname + "." + key, source), v};
      };
      Layer layer;
      auto [q, q_at] = array("Q");
      if (!q.defined()) {
        throw Error(fmt::format("{}: {} has no 'Q'", where(source, lv), lname));
      }
      if (q.dim() != 3 || q.size(1) != C || q.size(0) < 1 || q.size(2) < 1) {
        throw Error(fmt::format("{}: {}.Q has shape {}, expected [n_heads, {}, d_head]", where(source, *q_at),
                                lname, shape_str(q), C));
      }
      layer.Q = q;
      const int64_t H = q.size(0), D = q.size(2);
      for (const char* key : {"K", "V", "P"}) {
        auto [t, at] = array(key);
        if (!t.defined()) throw Error(fmt::format("{}: {} has no '{}'", where(source, lv), lname, key));
        expect_shape(t, {H, C, D}, lname + "." + key, source, at);
        (key[0] == 'K' ? layer.K : key[0] == 'V' ? layer.V : layer.P) = t;
      }
      // The MLP: empty M1/b1/M2 (or none) is a layer without one; b2 may stay.
      auto [m1, m1_at] = array("M1");
      auto [b1, b1_at] = array("b1");
      auto [m2, m2_at] = array("M2");
      auto [b2, b2_at] = array("b2");
      const bool no_mlp = (!m1.defined() || m1.numel() == 0) && (!m2.defined() || m2.numel() == 0);
      const int64_t F = no_mlp ? 0 : (m1.defined() && m1.dim() == 2 ? m1.size(1) : -1);
      if (F < 0) {
        throw Error(fmt::format("{}: {}.M1 has shape {}, expected [{}, d_ff]", m1_at ? where(source, *m1_at) : source,
                                lname, m1.defined() ? shape_str(m1) : "none", C));
      }
      layer.M1 = F == 0 ? torch::zeros({C, 0}, torch::kFloat64) : m1;
      expect_shape(layer.M1, {C, F}, lname + ".M1", source, m1_at);
      layer.b1 = (F == 0 || !b1.defined()) ? torch::zeros({F}, torch::kFloat64) : b1;
      if (F > 0) expect_shape(layer.b1, {F}, lname + ".b1", source, b1_at);
      layer.M2 = F == 0 ? torch::zeros({0, C}, torch::kFloat64) : m2;
      if (F > 0) {
        if (!m2.defined()) throw Error(fmt::format("{}: {} has M1 but no 'M2'", where(source, lv), lname));
        expect_shape(layer.M2, {F, C}, lname + ".M2", source, m2_at);
      }
      layer.b2 = (!b2.defined() || b2.numel() == 0) ? torch::zeros({C}, torch::kFloat64) : b2;
      expect_shape(layer.b2, {C}, lname + ".b2", source, b2_at);
      layer.ln1 = layer_norm_params(lv.field("ln1"), lname + ".ln1", C, source);
      layer.ln2 = layer_norm_params(lv.field("ln2"), lname + ".ln2", C, source);
      if (!p.layers.empty() && p.layers.front().Q.size(2) != D) {
        throw Error(fmt::format("{}: {}.Q has d_head {} but layers[0] has {}; lengen's layers share one "
                                "head width (heads and d_ff may differ: they are zero-padded)",
                                where(source, *q_at), lname, D, p.layers.front().Q.size(2)));
      }
      p.layers.push_back(std::move(layer));
    }
  }
  return p;
}

Program load_program(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw Error(fmt::format("cannot read the program file '{}'", path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_program(ss.str(), path);
}

namespace {

void write_array(std::ostream& os, const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kFloat64);
  const double* data = c.data_ptr<double>();
  std::function<void(int64_t, int64_t)> rec = [&](int64_t dim, int64_t offset) {
    if (dim == c.dim()) {
      os << fmt::format("{:.17g}", data[offset]);
      return;
    }
    os << '[';
    const int64_t stride = c.stride(dim);
    for (int64_t i = 0; i < c.size(dim); ++i) {
      if (i) os << ", ";
      rec(dim + 1, offset + i * stride);
    }
    os << ']';
  };
  if (c.dim() == 0) {
    os << fmt::format("{:.17g}", c.item<double>());
  } else {
    rec(0, 0);
  }
}

void write_norm(std::ostream& os, const LayerNormParams& n) {
  os << "{\"gamma\": ";
  write_array(os, n.gamma);
  os << ", \"beta\": ";
  write_array(os, n.beta);
  os << '}';
}

}  // namespace

std::string program_to_json(const Program& p) {
  std::ostringstream os;
  os << "{\n  \"tok_emb\": ";
  write_array(os, p.tok_emb);
  os << ",\n  \"pos_emb\": ";
  write_array(os, p.pos_emb);
  if (!p.tied()) {
    os << ",\n  \"out_emb\": ";
    write_array(os, p.out_emb);
  }
  os << ",\n  \"layers\": [";
  for (size_t l = 0; l < p.layers.size(); ++l) {
    const Layer& L = p.layers[l];
    os << (l ? ",\n    {" : "\n    {");
    const std::pair<const char*, const torch::Tensor*> arrays[] = {
        {"Q", &L.Q}, {"K", &L.K}, {"V", &L.V}, {"P", &L.P},
        {"M1", &L.M1}, {"b1", &L.b1}, {"M2", &L.M2}, {"b2", &L.b2}};
    for (const auto& [key, t] : arrays) {
      os << "\"" << key << "\": ";
      write_array(os, *t);
      os << ", ";
    }
    os << "\"ln1\": ";
    write_norm(os, L.ln1);
    os << ", \"ln2\": ";
    write_norm(os, L.ln2);
    os << '}';
  }
  os << (p.layers.empty() ? "],\n" : "\n  ],\n") << "  \"lnf\": ";
  write_norm(os, p.lnf);
  os << "\n}\n";
  return os.str();
}

ParameterCount count_parameters(const Program& p) {
  ParameterCount c;
  auto add = [&](const torch::Tensor& t) {
    c.total += t.numel();
    c.nonzero += t.numel() == 0 ? 0 : t.ne(0).sum().item<int64_t>();
  };
  add(p.tok_emb);
  add(p.pos_emb);
  if (!p.tied() && !torch::equal(p.out_emb, p.tok_emb)) {
    add(p.out_emb);
  }
  for (const auto& L : p.layers) {
    for (const auto* t : {&L.Q, &L.K, &L.V, &L.P, &L.M1, &L.b1, &L.M2, &L.b2}) {
      add(*t);
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------
// Program <-> lengen model

namespace {

torch::Tensor per_channel(const torch::Tensor& t, int64_t C) {
  return t.dim() == 0 ? t.expand({C}).clone() : t;
}

bool any_nonzero(const torch::Tensor& t) { return t.numel() > 0 && t.ne(0).any().item<bool>(); }

// The format's pos_emb: one table over sequence indices, added to the token embedding.
class ProgramPositions final : public PositionScheme {
 public:
  explicit ProgramPositions(const torch::Tensor& table) : table_(register_parameter("level0", table.clone())) {}
  uint32_t hooks() const override { return kHookInputEmbedding; }
  torch::Tensor transform_ids(const torch::Tensor& ids, int64_t offset, bool /*training*/) override {
    return torch::arange(offset, offset + ids.size(2), ids.options()).view({1, 1, -1});  // [1, 1, T]
  }
  torch::Tensor embed(const torch::Tensor& ids) override { return torch::embedding(table_, ids[0]); }
  std::vector<LearnedPositionTable> learned_tables() const override { return {{table_, true, 0}}; }

 private:
  torch::Tensor table_;
};

}  // namespace

Built build_model(const Program& p, torch::Dtype dtype) {
  const int64_t C = p.d_model();
  ModelConfig cfg;
  cfg.arch = "decoder";
  cfg.layers = static_cast<int64_t>(p.layers.size());
  cfg.d_model = C;
  cfg.heads = 1;
  cfg.d_head = 1;
  cfg.d_ff = 0;
  bool ff_bias = false;
  for (const auto& L : p.layers) {
    cfg.heads = std::max(cfg.heads, L.Q.size(0));
    cfg.d_head = L.Q.size(2);
    cfg.d_ff = std::max(cfg.d_ff, L.M1.size(1));
    ff_bias = ff_bias || any_nonzero(L.b1) || any_nonzero(L.b2);
  }
  if (ff_bias && cfg.d_ff == 0) {
    cfg.d_ff = 1;  // a layer with only b2: one dead hidden unit carries the bias
  }
  cfg.norm = "taotp_layernorm";
  cfg.norm_eps = 1e-10;
  cfg.softmax_eps = 1e-10;  // Figure 1.1's softmax: norm(exp(x - max)) adds 1e-10 to the sum
  cfg.norm_position = "pre";
  cfg.activation = "relu";
  cfg.dropout = 0;
  cfg.attention_bias = false;
  cfg.ff_bias = ff_bias;
  cfg.tie_embeddings = p.tied();

  auto positions = std::make_shared<ProgramPositions>(p.pos_emb);  // set here, not by name
  Built b{cfg, Transformer(cfg, p.vocab_size(), std::vector<std::shared_ptr<PositionScheme>>{positions})};
  b.model->to(torch::kFloat64);
  b.model->eval();

  torch::NoGradGuard ng;
  auto params = b.model->named_parameters();
  auto set = [&](const std::string& name, const torch::Tensor& value) {
    auto* t = params.find(name);
    LENGEN_CHECK(t != nullptr, "internal: the TAOTP model has no parameter '{}'", name);
    LENGEN_CHECK(t->sizes() == value.sizes(), "internal: parameter '{}' is {} but the program gives {}",
                 name, shape_str(*t), shape_str(value));
    t->copy_(value);
  };
  auto set_norm = [&](const std::string& name, const LayerNormParams& n) {
    set(name + ".weight", per_channel(n.gamma, C));
    set(name + ".bias", per_channel(n.beta, C));
  };
  set("tok_emb.weight", p.tok_emb);
  if (!p.tied()) set("lm_head.weight", p.out_emb);
  set_norm("norm_final", p.lnf);
  const int64_t H = cfg.heads, D = cfg.head_dim(), F = cfg.d_ff;
  for (size_t l = 0; l < p.layers.size(); ++l) {
    const Layer& L = p.layers[l];
    const std::string pre = fmt::format("blocks.{}.", l);
    // Pad heads with zeros: a zero head adds nothing.
    auto pad_heads = [&](const torch::Tensor& t) {  // [h, C, D] -> [H, C, D]
      auto out = torch::zeros({H, C, D}, torch::kFloat64);
      out.slice(0, 0, t.size(0)).copy_(t);
      return out;
    };
    // q_h = x Q_h: row h*D + k of the q block is Q[h, :, k].
    auto rows = [&](const torch::Tensor& m) { return pad_heads(m).permute({0, 2, 1}).reshape({H * D, C}); };
    set(pre + "attn.qkv.weight", torch::cat({rows(L.Q), rows(L.K), rows(L.V)}, 0));
    // y_d = sum_{h,k} z_{h,k} P[h, d, k]: out.weight[d, h*D + k] = P[h, d, k].
    set(pre + "attn.out.weight", pad_heads(L.P).permute({1, 0, 2}).reshape({C, H * D}));
    set_norm(pre + "norm_attn_pre", L.ln1);
    if (F > 0) {
      const int64_t f = L.M1.size(1);
      auto up = torch::zeros({F, C}, torch::kFloat64);
      up.slice(0, 0, f).copy_(L.M1.t());
      auto down = torch::zeros({C, F}, torch::kFloat64);
      down.slice(1, 0, f).copy_(L.M2.t());
      set(pre + "ff.up.weight", up);
      set(pre + "ff.down.weight", down);
      if (ff_bias) {
        auto b1 = torch::zeros({F}, torch::kFloat64);
        b1.slice(0, 0, f).copy_(L.b1);
        set(pre + "ff.up.bias", b1);
        set(pre + "ff.down.bias", L.b2);
      }
      set_norm(pre + "norm_ff_pre", L.ln2);
    }
  }
  b.model->to(dtype);
  return b;
}

Program export_program(const Experiment& exp, Transformer& model) {
  const ModelConfig& cfg = exp.model;
  auto refuse = [&](const std::string& what) {
    throw Error(fmt::format("{}: cannot export as a TAOTP program: {}", exp.file, what));
  };
  // The scheme is found by what it adds, not by its name: exactly one learned table over
  // sequence indices and nothing else positional.
  const auto& schemes = model->schemes();
  if (schemes.size() != 1) {
    refuse(fmt::format("the format has one learned position table; this model has {} position schemes",
                       schemes.size()));
  }
  const PositionScheme& scheme = *schemes[0];
  const auto tables = scheme.learned_tables();
  const bool one_index_table = tables.size() == 1 && tables[0].sequence_index;
  if (scheme.hooks() != kHookInputEmbedding || !one_index_table || scheme.cyclic() != 0) {
    const std::string name = exp.position_nodes[0].is_scalar() ? exp.position_nodes[0].as_string()
                                                               : exp.position_nodes[0].child("name").as_string();
    const std::string what =
        scheme.hooks() != kHookInputEmbedding ? "acts inside attention"
        : tables.empty()                      ? "adds no learned table"
        : !one_index_table ? fmt::format("adds {} learned table(s) over the task's IDs", tables.size())
                           : "indexes its table cyclically";
    refuse(fmt::format("position[0] is '{}', which {}; the format needs one learned table over "
                       "sequence indices and nothing else positional (e.g. `ape` with ids: index)",
                       name, what));
  }
  if (cfg.norm == "rmsnorm") refuse("model.norm is rmsnorm; the format has LayerNorm only");
  if (cfg.norm_position != "pre") refuse(fmt::format("model.norm_position is {}; the format is pre-norm", cfg.norm_position));
  if (cfg.d_ff > 0 && cfg.activation != "relu") {
    refuse(fmt::format("model.activation is {}; the format's MLP is ReLU", cfg.activation));
  }
  if (cfg.attention_bias) refuse("model.attention_bias is true; the format's attention has no biases");

  torch::NoGradGuard ng;
  auto params = model->named_parameters();
  auto get = [&](const std::string& name) {
    auto* t = params.find(name);
    LENGEN_CHECK(t != nullptr, "internal: the model has no parameter '{}'", name);
    return t->detach().to(torch::kCPU, torch::kFloat64).clone();
  };
  auto norm = [&](const std::string& name) { return LayerNormParams{get(name + ".weight"), get(name + ".bias")}; };
  const int64_t C = cfg.d_model, H = cfg.heads, D = cfg.head_dim(), F = cfg.d_ff;
  Program p;
  p.tok_emb = get("tok_emb.weight");
  p.pos_emb = tables[0].weight.detach().to(torch::kCPU, torch::kFloat64).clone();
  if (!cfg.tie_embeddings) p.out_emb = get("lm_head.weight");
  p.lnf = norm("norm_final");
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string pre = fmt::format("blocks.{}.", cfg.shared_layers ? 0 : l);
    Layer L;
    auto qkv = get(pre + "attn.qkv.weight");  // [3HD, C]
    auto heads = [&](int64_t part) { return qkv.slice(0, part * H * D, (part + 1) * H * D).view({H, D, C}).permute({0, 2, 1}).contiguous(); };
    L.Q = heads(0);
    L.K = heads(1);
    L.V = heads(2);
    L.P = get(pre + "attn.out.weight").view({C, H, D}).permute({1, 0, 2}).contiguous();
    L.ln1 = norm(pre + "norm_attn_pre");
    if (F > 0) {
      L.M1 = get(pre + "ff.up.weight").t().contiguous();
      L.M2 = get(pre + "ff.down.weight").t().contiguous();
      L.b1 = cfg.ff_bias ? get(pre + "ff.up.bias") : torch::zeros({F}, torch::kFloat64);
      L.b2 = cfg.ff_bias ? get(pre + "ff.down.bias") : torch::zeros({C}, torch::kFloat64);
      L.ln2 = norm(pre + "norm_ff_pre");
    } else {
      L.M1 = torch::zeros({C, 0}, torch::kFloat64);
      L.b1 = torch::zeros({0}, torch::kFloat64);
      L.M2 = torch::zeros({0, C}, torch::kFloat64);
      L.b2 = torch::zeros({C}, torch::kFloat64);
      L.ln2 = {torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
    }
    p.layers.push_back(std::move(L));
  }
  return p;
}

std::vector<std::string> parse_vocabulary(const std::string& text, const std::string& source) {
  std::vector<std::string> tokens;
  // A list when the first character outside blank and `#` comment lines is '['.
  size_t first = 0;
  while (first < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[first]))) {
      ++first;
    } else if (text[first] == '#') {
      first = text.find('\n', first);
      first = first == std::string::npos ? text.size() : first + 1;
    } else {
      break;
    }
  }
  if (first < text.size() && text[first] == '[') {
    Literal list = Parser(text, source).parse();
    for (const auto& item : list.items) {
      if (item.kind != Literal::kString) {
        throw Error(fmt::format("{}: a vocabulary list holds strings only", where(source, item)));
      }
      tokens.push_back(item.text);
    }
  } else {
    std::string line;
    std::istringstream in(text);
    while (std::getline(in, line)) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      tokens.push_back(line);
    }
  }
  LENGEN_CHECK(!tokens.empty(), "{}: the vocabulary is empty", source);
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      LENGEN_CHECK(tokens[i] != tokens[j], "{}: token '{}' appears twice (entries {} and {})", source,
                   tokens[i], j, i);
    }
  }
  return tokens;
}

std::vector<std::string> load_vocabulary(const std::string& path) {
  std::ifstream in(path);
  LENGEN_CHECK(in.good(), "cannot read the vocabulary file '{}'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_vocabulary(ss.str(), path);
}

int64_t argmax_lowest(const torch::Tensor& logits) {
  auto l = logits.to(torch::kCPU).contiguous();
  const double best = l.max().item<double>();
  return l.eq(best).nonzero().min().item<int64_t>();
}

std::vector<int64_t> greedy_decode(Transformer& model,
                                   int64_t block_size,
                                   std::vector<int64_t> tokens,
                                   int64_t steps,
                                   int64_t eos,
                                   const std::function<void(int64_t, const torch::Tensor&)>& trace) {
  LENGEN_CHECK(!tokens.empty(), "the input has no tokens");
  const int64_t needed = static_cast<int64_t>(tokens.size()) + steps - 1;
  LENGEN_CHECK(needed <= block_size,
               "{} input tokens and {} steps need {} positions but the program's pos_emb has {} rows "
               "(block_size); give fewer --steps or a shorter input",
               tokens.size(), steps, needed, block_size);
  torch::NoGradGuard ng;
  model->eval();
  std::vector<int64_t> out;
  for (int64_t step = 0; step < steps; ++step) {
    const int64_t T = static_cast<int64_t>(tokens.size());
    auto x = torch::tensor(tokens, torch::kInt64).view({1, T});
    auto ids = torch::arange(T, torch::kInt64).view({1, 1, T});
    auto logits = model->forward(x, ids)[0][T - 1];  // [V]
    if (trace) trace(step, logits);
    const int64_t next = argmax_lowest(logits);
    out.push_back(next);
    tokens.push_back(next);
    if (next == eos) break;
  }
  return out;
}

}  // namespace lengen::taotp
