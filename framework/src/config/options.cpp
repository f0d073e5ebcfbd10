// Options: a component's YAML validated against its schema (types, ranges, choices, nested
// maps, component references) and read back typed.
#include "lengen/config/schema.h"

#include <algorithm>

namespace lengen {

namespace {
ReferenceCheck reference_check = nullptr;
}  // namespace

void set_reference_check(ReferenceCheck check) {
  reference_check = check;
}

namespace {

// Fails on a key of `node` that `spec` does not declare (and `skip` does not list), with the
// closest declared key.
void check_keys(const ComponentSpec& spec,
                const ConfigNode& node,
                const std::vector<std::string>& skip,
                const std::string& component,
                bool section) {
  std::vector<std::string> known;
  for (const auto& opt : spec.options) {
    known.push_back(opt.key);
  }
  for (const auto& key : node.keys()) {
    if (std::find(skip.begin(), skip.end(), key) != skip.end()) {
      continue;
    }
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      if (section) {
        node.key_node(key).fail(fmt::format(
            "unknown key '{}'{}; valid keys here: {}", key, did_you_mean(key, known), join(known)));
      }
      node.key_node(key).fail(fmt::format("unknown option '{}' for {}{}; its options are: {}",
                                          key,
                                          component,
                                          did_you_mean(key, known),
                                          known.empty() ? "none" : join(known)));
    }
  }
}

// Fails when `v`, option `opt`'s value at `c`, is outside the option's range.
void check_range(const OptionSpec& opt,
                 const ConfigNode& c,
                 double v,
                 const std::string& component,
                 bool section) {
  if ((opt.min && v < *opt.min) || (opt.max && v > *opt.max)) {
    std::string range = opt.min && opt.max ? fmt::format("between {} and {}", *opt.min, *opt.max)
                        : opt.min          ? fmt::format(">= {}", *opt.min)
                                           : fmt::format("<= {}", *opt.max);
    if (section) {
      c.fail(fmt::format("{}.{} must be {}, got {}", component, opt.key, range, v));
    }
    c.fail(fmt::format("option '{}' of {} must be {}, got {}", opt.key, component, range, v));
  }
}

// Checks the value `c` given for `opt` (its type, range, choices, nested schema, or the
// registry of the component it names); returns it, a map shorthand expanded.
ConfigNode check_value(const OptionSpec& opt,
                       ConfigNode c,
                       const std::string& component,
                       bool section) {
  switch (opt.type) {
    case OptionType::kInt:
      check_range(opt, c, static_cast<double>(c.as_int()), component, section);
      break;
    case OptionType::kFloat:
      check_range(opt, c, c.as_float(), component, section);
      break;
    case OptionType::kBool:
      c.as_bool();
      break;
    case OptionType::kString: {
      std::string v = c.as_string();
      if (!opt.choices.empty() &&
          std::find(opt.choices.begin(), opt.choices.end(), v) == opt.choices.end()) {
        if (section) {
          c.fail(fmt::format("{}.{} must be one of {}, got '{}'{}",
                             component,
                             opt.key,
                             join(opt.choices),
                             v,
                             did_you_mean(v, opt.choices)));
        }
        c.fail(fmt::format("option '{}' of {} must be one of {}, got '{}'{}",
                           opt.key,
                           component,
                           join(opt.choices),
                           v,
                           did_you_mean(v, opt.choices)));
      }
      break;
    }
    case OptionType::kIntList:
      for (int64_t v : c.as_int_list()) {
        check_range(opt, c, static_cast<double>(v), component, section);
      }
      break;
    case OptionType::kFloatList:
      for (double v : c.as_float_list()) {
        check_range(opt, c, v, component, section);
      }
      break;
    case OptionType::kStringList:
      for (const std::string& v : c.as_string_list()) {
        if (!opt.choices.empty() &&
            std::find(opt.choices.begin(), opt.choices.end(), v) == opt.choices.end()) {
          c.fail(fmt::format("{}.{}: every entry must be one of {}, got '{}'{}",
                             component,
                             opt.key,
                             join(opt.choices),
                             v,
                             did_you_mean(v, opt.choices)));
        }
      }
      break;
    case OptionType::kMap:
      if (c.is_scalar() && !opt.shorthand.empty()) {
        YAML::Node m(YAML::NodeType::Map);
        m[opt.shorthand] = c.yaml();
        c = ConfigNode(m, c.source(), c.path());
      }
      if (!c.is_map()) {
        c.fail(
            fmt::format("{}.{}: expected a map{}",
                        component,
                        opt.key,
                        opt.shorthand.empty() ? "" : fmt::format(" or a {} name", opt.shorthand)));
      }
      if (!opt.open) {
        Options::validate({"section", component + "." + opt.key, "", opt.fields}, c, {});
      }
      break;
    case OptionType::kComponent: {
      const ConfigNode name = c.is_map() ? c.child("name") : c;
      if (!(c.is_scalar() || c.is_map()) || !name.defined() || !name.is_scalar()) {
        c.fail(
            fmt::format("{}.{}: expected the name of a registered {} or a map {{name: "
                        "NAME, options...}}",
                        component,
                        opt.key,
                        opt.reference));
      }
      if (reference_check)
        reference_check(opt.reference, c);
      break;
    }
    case OptionType::kAny:
      break;  // its owner reads and checks it
    case OptionType::kMapList:
      if (!c.is_sequence()) {
        c.fail(fmt::format("{}.{}: expected a list of maps", component, opt.key));
      }
      for (size_t i = 0; i < c.size(); ++i) {
        Options::validate(
            {"section", fmt::format("{}.{}[{}]", component, opt.key, i), "", opt.fields},
            c.at(i),
            {});
      }
      break;
  }
  return c;
}

}  // namespace

Options Options::only(const ComponentSpec& spec) const {
  Options o;
  o.component_ = spec.kind == "section" ? spec.name : fmt::format("{} '{}'", spec.kind, spec.name);
  o.specs_ = spec.options;
  for (const auto& opt : spec.options) {
    o.values_.emplace_back(opt.key, node_of(opt.key));
    if (given(opt.key))
      o.given_.push_back(opt.key);
  }
  return o;
}

Options Options::validate(const ComponentSpec& spec,
                          const ConfigNode& node_in,
                          const std::vector<std::string>& skip) {
  Options o;
  const bool section = spec.kind == "section";
  o.component_ = section ? spec.name : fmt::format("{} '{}'", spec.kind, spec.name);
  o.specs_ = spec.options;
  ConfigNode node = node_in;
  // A bare name (scalar) selects the component with default options.
  if (node.defined() && !node.is_map() && !node.is_scalar()) {
    node.fail(fmt::format("expected a map of options for {}", o.component_));
  }
  if (section && node.defined() && !node.is_map()) {
    node.fail(fmt::format("{}: expected a map", o.component_));
  }
  check_keys(spec, node, skip, o.component_, section);
  for (const auto& opt : spec.options) {
    ConfigNode c = node.child(opt.key);
    if (c.defined()) {
      o.given_.push_back(opt.key);
    } else if (opt.type == OptionType::kMap || opt.type == OptionType::kMapList || opt.optional) {
      // Absent: a map of defaults, an empty list, or nothing.
    } else if (opt.default_value) {
      auto src = std::make_shared<ConfigSource>();
      src->file = fmt::format("default of {}", o.component_);
      c = ConfigNode(*opt.default_value, src, opt.key);
    } else if (section) {
      node.fail(fmt::format("{}: missing required key '{}' ({})", o.component_, opt.key, opt.doc));
    } else {
      node.fail(fmt::format("{} needs option '{}' ({}: {})",
                            o.component_,
                            opt.key,
                            option_type_name(opt.type),
                            opt.doc));
    }
    if (!c.defined()) {
      o.values_.emplace_back(opt.key, c);
      if (opt.type == OptionType::kMap && !opt.open) {
        Options::validate({"section", o.component_ + "." + opt.key, "", opt.fields}, c, {});
      }
      continue;
    }
    c = check_value(opt, c, o.component_, section);
    o.values_.emplace_back(opt.key, c);
  }
  return o;
}

Options Options::get_map(const std::string& key) const {
  for (const auto& opt : specs_) {
    if (opt.key == key && opt.type == OptionType::kMap) {
      return Options::validate(
          {"section", component_ + "." + key, "", opt.fields}, node_of(key), {});
    }
  }
  throw Error(fmt::format("internal: {} has no map option '{}'", component_, key));
}

std::vector<Options> Options::get_map_list(const std::string& key) const {
  for (const auto& opt : specs_) {
    if (opt.key == key && opt.type == OptionType::kMapList) {
      std::vector<Options> out;
      const ConfigNode& n = node_of(key);
      for (size_t i = 0; i < (n.defined() ? n.size() : 0); ++i) {
        out.push_back(Options::validate(
            {"section", fmt::format("{}.{}[{}]", component_, key, i), "", opt.fields},
            n.at(i),
            {}));
      }
      return out;
    }
  }
  throw Error(fmt::format("internal: {} has no map-list option '{}'", component_, key));
}

const ConfigNode& Options::node_of(const std::string& key) const {
  for (const auto& [k, n] : values_) {
    if (k == key) {
      return n;
    }
  }
  throw Error(fmt::format("internal: {} has no declared option '{}'", component_, key));
}

int64_t Options::get_int(const std::string& key) const {
  return node_of(key).as_int();
}

double Options::get_float(const std::string& key) const {
  return node_of(key).as_float();
}

bool Options::get_bool(const std::string& key) const {
  return node_of(key).as_bool();
}

std::string Options::get_string(const std::string& key) const {
  const ConfigNode& n = node_of(key);
  if (n.is_map()) {  // a component reference with options, as one line of YAML
    YAML::Emitter e;
    e << YAML::Flow << n.yaml();
    return e.c_str();
  }
  return n.as_string();
}

std::vector<int64_t> Options::get_int_list(const std::string& key) const {
  return node_of(key).as_int_list();
}

std::vector<double> Options::get_float_list(const std::string& key) const {
  return node_of(key).as_float_list();
}

std::vector<std::string> Options::get_string_list(const std::string& key) const {
  return node_of(key).as_string_list();
}

std::pair<int64_t, int64_t> Options::get_int_range(const std::string& key) const {
  auto v = get_int_list(key);
  if (v.size() == 1) {
    v.push_back(v[0]);
  }
  if (v.size() != 2 || v[0] > v[1]) {
    fail(key, "expected [lo, hi] with lo <= hi");
  }
  return {v[0], v[1]};
}

bool Options::given(const std::string& key) const {
  return std::find(given_.begin(), given_.end(), key) != given_.end();
}

void Options::fail(const std::string& key, const std::string& message) const {
  node_of(key).fail(fmt::format("{}: {}", component_, message));
}

YAML::Node Options::to_yaml() const {
  YAML::Node out(YAML::NodeType::Map);
  for (size_t i = 0; i < values_.size(); ++i) {
    const auto& [k, n] = values_[i];
    const OptionSpec* opt = i < specs_.size() && specs_[i].key == k ? &specs_[i] : nullptr;
    if (opt && opt->type == OptionType::kMap && !opt->open) {
      out[k] = get_map(k).to_yaml();  // nested defaults filled in
    } else if (opt && opt->type == OptionType::kMapList) {
      YAML::Node list(YAML::NodeType::Sequence);
      for (const auto& m : get_map_list(k))
        list.push_back(m.to_yaml());
      out[k] = list;
    } else if (n.defined()) {
      out[k] = YAML::Clone(n.yaml());
    }
  }
  return out;
}

}  // namespace lengen
