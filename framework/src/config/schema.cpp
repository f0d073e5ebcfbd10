// Option schemas: OptionSpec and ComponentSpec, what `lengen plugins` prints (Options, the
// validated values: options.cpp).
#include "lengen/config/schema.h"

#include <algorithm>

namespace lengen {

const char* option_type_name(OptionType type) {
  switch (type) {
    case OptionType::kInt:
      return "int";
    case OptionType::kFloat:
      return "float";
    case OptionType::kBool:
      return "bool";
    case OptionType::kString:
      return "string";
    case OptionType::kIntList:
      return "list<int>";
    case OptionType::kFloatList:
      return "list<float>";
    case OptionType::kMap:
      return "map";
    case OptionType::kMapList:
      return "list<map>";
    case OptionType::kStringList:
      return "list<string>";
    case OptionType::kComponent:
      return "component";
    case OptionType::kAny:
      return "any";
  }
  return "?";
}

namespace {
OptionSpec make_spec(std::string key, OptionType type, std::string doc) {
  OptionSpec s;
  s.key = std::move(key);
  s.type = type;
  s.doc = std::move(doc);
  return s;
}
}  // namespace

OptionSpec OptionSpec::integer(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kInt, std::move(doc));
}

OptionSpec OptionSpec::number(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kFloat, std::move(doc));
}

OptionSpec OptionSpec::boolean(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kBool, std::move(doc));
}

OptionSpec OptionSpec::string(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kString, std::move(doc));
}

OptionSpec OptionSpec::int_list(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kIntList, std::move(doc));
}

OptionSpec OptionSpec::float_list(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kFloatList, std::move(doc));
}

OptionSpec OptionSpec::string_list(std::string key, std::string doc) {
  return make_spec(std::move(key), OptionType::kStringList, std::move(doc));
}

OptionSpec OptionSpec::map(std::string key, std::string doc, std::vector<OptionSpec> fields) {
  OptionSpec s = make_spec(std::move(key), OptionType::kMap, std::move(doc));
  s.fields = std::move(fields);
  return s;
}

OptionSpec OptionSpec::map_list(std::string key, std::string doc, std::vector<OptionSpec> fields) {
  OptionSpec s = make_spec(std::move(key), OptionType::kMapList, std::move(doc));
  s.fields = std::move(fields);
  return s;
}

OptionSpec OptionSpec::component(std::string key, std::string doc, std::string kind) {
  OptionSpec s = make_spec(std::move(key), OptionType::kComponent, std::move(doc));
  s.reference = std::move(kind);
  return s;
}

OptionSpec OptionSpec::any(std::string key, std::string doc, std::string shape) {
  OptionSpec s = make_spec(std::move(key), OptionType::kAny, std::move(doc));
  s.shape = std::move(shape);
  return s;
}

std::string OptionSpec::describe_type() const {
  std::string s = option_type_name(type);
  if (type == OptionType::kComponent) {
    s = "registered " + reference + ": NAME or {name: NAME, options...}";
  }
  if (type == OptionType::kAny) {
    s = shape;
  }
  if (!choices.empty()) {
    s = "one of {" + join(choices, ", ") + "}";
  }
  if (type == OptionType::kMap || type == OptionType::kMapList) {
    // Maps default field by field.
  } else if (optional) {
    s += ", optional";
  } else if (default_value) {
    std::string d = default_value->Scalar();
    if (type == OptionType::kFloat) {
      d = fmt::format("{:g}", default_value->as<double>());  // 0.9, not 0.90000000000000002
    }
    if (!default_value->IsScalar()) {
      YAML::Emitter e;
      e << YAML::Flow << *default_value;
      d = e.c_str();
    }
    s += ", default " + (d.empty() ? std::string("\"\"") : d);
  } else {
    s += ", required";
  }
  if (min) {
    s += fmt::format(", >= {}", *min);
  }
  if (max) {
    s += fmt::format(", <= {}", *max);
  }
  return s;
}

}  // namespace lengen
