// TAOTP programs: parsing and shape-checking the dict, writing it back as JSON, counting
// parameters as the book does, and reading a vocabulary.
#include "lengen/taotp/program.h"

#include "literal.h"

#include "lengen/core/error.h"
#include "lengen/core/shape.h"

#include <torch/torch.h>

#include <cctype>
#include <fstream>
#include <sstream>

namespace lengen::taotp {

namespace {

void expect_shape(const torch::Tensor& t,
                  const std::vector<int64_t>& shape,
                  const std::string& name,
                  const std::string& source,
                  const Literal* at) {
  if (t.sizes() != torch::IntArrayRef(shape)) {
    throw Error(fmt::format("{}: {} has shape {}, expected [{}]",
                            at ? where(source, *at) : source,
                            name,
                            shape_text(t),
                            fmt::join(shape, ", ")));
  }
}

LayerNormParams layer_norm_params(const Literal* v,
                                  const std::string& name,
                                  int64_t C,
                                  const std::string& source) {
  LayerNormParams p{torch::tensor(1.0, torch::kFloat64), torch::tensor(0.0, torch::kFloat64)};
  if (!v)
    return p;
  if (v->kind != Literal::kDict) {
    throw Error(fmt::format(
        "{}: {} must be a dict {{\"gamma\": ..., \"beta\": ...}}", where(source, *v), name));
  }
  for (const auto& [key, value] : v->fields) {
    if (key != "gamma" && key != "beta") {
      throw Error(fmt::format("{}: {}: unknown key '{}'{}; expected gamma and beta",
                              where(source, value),
                              name,
                              key,
                              did_you_mean(key, {"gamma", "beta"})));
    }
    auto t = to_tensor(value, name + "." + key, source);
    if (t.dim() > 1 || (t.dim() == 1 && t.size(0) != C)) {
      throw Error(fmt::format("{}: {}.{} has shape {}, expected a scalar or [{}]",
                              where(source, value),
                              name,
                              key,
                              shape_text(t),
                              C));
    }
    (key == "gamma" ? p.gamma : p.beta) = t;
  }
  return p;
}

// One entry of `layers`, named `lname` ("layers[2]"); *q_where: where its Q was written.
Layer parse_layer(const Literal& lv,
                  const std::string& lname,
                  int64_t C,
                  const std::string& source,
                  const Literal** q_where) {
  const std::vector<std::string> layer_keys{
      "Q", "K", "V", "P", "M1", "b1", "M2", "b2", "ln1", "ln2"};
  if (lv.kind != Literal::kDict) {
    throw Error(fmt::format("{}: {} must be a dict", where(source, lv), lname));
  }
  for (const auto& [key, value] : lv.fields) {
    if (std::find(layer_keys.begin(), layer_keys.end(), key) == layer_keys.end()) {
      throw Error(fmt::format("{}: {}: unknown key '{}'{}; a layer has {}",
                              where(source, value),
                              lname,
                              key,
                              did_you_mean(key, layer_keys),
                              join(layer_keys)));
    }
  }
  auto array = [&](const char* key) -> std::pair<torch::Tensor, const Literal*> {
    const Literal* v = lv.field(key);
    if (!v)
      return {torch::Tensor(), nullptr};
    return {to_tensor(*v, lname + "." + key, source), v};
  };
  Layer layer;
  auto [q, q_at] = array("Q");
  if (!q.defined()) {
    throw Error(fmt::format("{}: {} has no 'Q'", where(source, lv), lname));
  }
  if (q.dim() != 3 || q.size(1) != C || q.size(0) < 1 || q.size(2) < 1) {
    throw Error(fmt::format("{}: {}.Q has shape {}, expected [n_heads, {}, d_head]",
                            where(source, *q_at),
                            lname,
                            shape_text(q),
                            C));
  }
  layer.Q = q;
  *q_where = q_at;
  const int64_t H = q.size(0), D = q.size(2);
  for (const char* key : {"K", "V", "P"}) {
    auto [t, at] = array(key);
    if (!t.defined())
      throw Error(fmt::format("{}: {} has no '{}'", where(source, lv), lname, key));
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
    throw Error(fmt::format("{}: {}.M1 has shape {}, expected [{}, d_ff]",
                            m1_at ? where(source, *m1_at) : source,
                            lname,
                            m1.defined() ? shape_text(m1) : "none",
                            C));
  }
  layer.M1 = F == 0 ? torch::zeros({C, 0}, torch::kFloat64) : m1;
  expect_shape(layer.M1, {C, F}, lname + ".M1", source, m1_at);
  layer.b1 = (F == 0 || !b1.defined()) ? torch::zeros({F}, torch::kFloat64) : b1;
  if (F > 0)
    expect_shape(layer.b1, {F}, lname + ".b1", source, b1_at);
  layer.M2 = F == 0 ? torch::zeros({0, C}, torch::kFloat64) : m2;
  if (F > 0) {
    if (!m2.defined())
      throw Error(fmt::format("{}: {} has M1 but no 'M2'", where(source, lv), lname));
    expect_shape(layer.M2, {F, C}, lname + ".M2", source, m2_at);
  }
  layer.b2 = (!b2.defined() || b2.numel() == 0) ? torch::zeros({C}, torch::kFloat64) : b2;
  expect_shape(layer.b2, {C}, lname + ".b2", source, b2_at);
  layer.ln1 = layer_norm_params(lv.field("ln1"), lname + ".ln1", C, source);
  layer.ln2 = layer_norm_params(lv.field("ln2"), lname + ".ln2", C, source);
  return layer;
}

}  // namespace

Program parse_program(const std::string& text, const std::string& source) {
  Literal root = parse_literal(text, source);
  if (root.kind != Literal::kDict) {
    throw Error(fmt::format("{}: a program is a dict {{\"tok_emb\": ..., \"pos_emb\": ..., ...}}",
                            where(source, root)));
  }
  const std::vector<std::string> known{"tok_emb", "pos_emb", "out_emb", "layers", "lnf"};
  for (const auto& [key, value] : root.fields) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw Error(fmt::format("{}: unknown key '{}'{}; a program has {}",
                              where(source, value),
                              key,
                              did_you_mean(key, known),
                              join(known)));
    }
  }
  auto required = [&](const char* key) -> const Literal& {
    const Literal* v = root.field(key);
    if (!v)
      throw Error(fmt::format("{}: the program has no '{}'", source, key));
    return *v;
  };
  Program p;
  const Literal& tok = required("tok_emb");
  p.tok_emb = to_tensor(tok, "tok_emb", source);
  if (p.tok_emb.dim() != 2 || p.tok_emb.size(0) < 1 || p.tok_emb.size(1) < 1) {
    throw Error(
        fmt::format("{}: tok_emb has shape {}, expected [vocab_size, d_model] with both >= 1",
                    where(source, tok),
                    shape_text(p.tok_emb)));
  }
  const int64_t V = p.vocab_size(), C = p.d_model();
  const Literal& pos = required("pos_emb");
  p.pos_emb = to_tensor(pos, "pos_emb", source);
  if (p.pos_emb.dim() != 2 || p.pos_emb.size(1) != C || p.pos_emb.size(0) < 1) {
    throw Error(
        fmt::format("{}: pos_emb has shape {}, expected [block_size, {}] (d_model from tok_emb)",
                    where(source, pos),
                    shape_text(p.pos_emb),
                    C));
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
    for (size_t l = 0; l < layers->items.size(); ++l) {
      const Literal& lv = layers->items[l];
      const std::string lname = fmt::format("layers[{}]", l);
      const Literal* q_at = nullptr;
      Layer layer = parse_layer(lv, lname, C, source, &q_at);
      const int64_t D = layer.Q.size(2);
      if (!p.layers.empty() && p.layers.front().Q.size(2) != D) {
        throw Error(
            fmt::format("{}: {}.Q has d_head {} but layers[0] has {}; lengen's layers share one "
                        "head width (heads and d_ff may differ: they are zero-padded)",
                        where(source, *q_at),
                        lname,
                        D,
                        p.layers.front().Q.size(2)));
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
      if (i)
        os << ", ";
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
    const std::pair<const char*, const torch::Tensor*> arrays[] = {{"Q", &L.Q},
                                                                   {"K", &L.K},
                                                                   {"V", &L.V},
                                                                   {"P", &L.P},
                                                                   {"M1", &L.M1},
                                                                   {"b1", &L.b1},
                                                                   {"M2", &L.M2},
                                                                   {"b2", &L.b2}};
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
    Literal list = parse_literal(text, source);
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
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      tokens.push_back(line);
    }
  }
  LENGEN_CHECK(!tokens.empty(), "{}: the vocabulary is empty", source);
  for (size_t i = 0; i < tokens.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      LENGEN_CHECK(tokens[i] != tokens[j],
                   "{}: token '{}' appears twice (entries {} and {})",
                   source,
                   tokens[i],
                   j,
                   i);
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

}  // namespace lengen::taotp
