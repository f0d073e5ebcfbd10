#include "lengen/train/checkpoint.h"

#include "lengen/core/error.h"
#include "lengen/core/fault.h"
#include "lengen/core/file.h"
#include "lengen/core/parse.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen {

const torch::Tensor* TensorFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) {
      return &t;
    }
  }
  return nullptr;
}

namespace {

const char* dtype_code(torch::Dtype d) {
  switch (d) {
    case torch::kFloat32:
      return "F32";
    case torch::kFloat64:
      return "F64";
    case torch::kBFloat16:
      return "BF16";
    case torch::kFloat16:
      return "F16";
    case torch::kInt64:
      return "I64";
    case torch::kInt32:
      return "I32";
    case torch::kUInt8:
      return "U8";
    case torch::kBool:
      return "BOOL";
    default:
      throw Error(fmt::format("safetensors: unsupported dtype {}", c10::toString(d)));
  }
}

torch::Dtype dtype_from_code(const std::string& c, const std::string& path) {
  if (c == "F32")
    return torch::kFloat32;
  if (c == "F64")
    return torch::kFloat64;
  if (c == "BF16")
    return torch::kBFloat16;
  if (c == "F16")
    return torch::kFloat16;
  if (c == "I64")
    return torch::kInt64;
  if (c == "I32")
    return torch::kInt32;
  if (c == "U8")
    return torch::kUInt8;
  if (c == "BOOL")
    return torch::kBool;
  throw Error(fmt::format("{}: unsupported safetensors dtype '{}'", path, c));
}

}  // namespace

void save_safetensors(const std::string& path,
                      const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    header["__metadata__"] = metadata;
  }
  std::vector<torch::Tensor> cpu;
  size_t offset = 0;
  for (const auto& [name, t] : tensors) {
    auto c = t.detach().to(torch::kCPU).contiguous();
    size_t bytes = c.numel() * c.element_size();
    header[name] = {{"dtype", dtype_code(c.scalar_type())},
                    {"shape", c.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    cpu.push_back(c);
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // pad so the data starts 8-byte aligned
  uint64_t n = h.size();
  write_file_atomic(path, [&](int fd, const std::string& tmp) {
    char len[8];
    for (int i = 0; i < 8; ++i) {
      len[i] = static_cast<char>((n >> (8 * i)) & 0xff);  // little-endian
    }
    write_all(fd, len, 8, tmp);
    write_all(fd, h.data(), h.size(), tmp);
    for (const auto& c : cpu) {
      write_all(fd, static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size(), tmp);
    }
  });
}

namespace {

// The JSON header of a safetensors file of `file_size` bytes, read from `in` at offset 0; `n` is
// its length (the data start at 8 + n).
nlohmann::ordered_json read_header(std::ifstream& in,
                                   const std::string& path,
                                   uint64_t file_size,
                                   uint64_t& n) {
  unsigned char len[8];
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(len), 8)) {
    throw Error(fmt::format("{}: truncated safetensors file (no header length)", path));
  }
  n = 0;
  for (int i = 7; i >= 0; --i) {
    n = (n << 8) | len[i];
  }
  if (n > file_size - 8) {
    throw Error(fmt::format("{}: header length {} exceeds the file size {}", path, n, file_size));
  }
  std::string h(n, '\0');
  if (!in.read(h.data(), static_cast<std::streamsize>(n))) {
    throw Error(fmt::format("{}: the header (bytes 8 to {}) could not be read", path, 8 + n));
  }
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(h);
  } catch (const std::exception& e) {
    throw Error(fmt::format("{}: malformed safetensors header: {}", path, e.what()));
  }
  if (!header.is_object()) {
    throw Error(
        fmt::format("{}: the safetensors header is a JSON {}, expected an object of tensors",
                    path,
                    header.type_name()));
  }
  return header;
}

// The `__metadata__` entry `e` into `out`: an object of strings.
void read_metadata(const nlohmann::ordered_json& e, const std::string& path, TensorFile& out) {
  if (!e.is_object()) {
    throw Error(fmt::format(
        "{}: __metadata__ is a JSON {}, expected an object of strings", path, e.type_name()));
  }
  for (auto m = e.begin(); m != e.end(); ++m) {
    if (!m->is_string()) {
      throw Error(fmt::format(
          "{}: __metadata__.{} is a JSON {}, expected a string", path, m.key(), m->type_name()));
    }
    out.metadata[m.key()] = m->get<std::string>();
  }
}

// The tensor `name` its header entry `e` describes, from the `data_size` bytes of data at
// `data_start`.
torch::Tensor read_tensor(std::ifstream& in,
                          const std::string& path,
                          const std::string& name,
                          const nlohmann::ordered_json& e,
                          uint64_t data_start,
                          uint64_t data_size) {
  // Every field checked before anything is allocated: a header may claim any size.
  auto bad = [&](const std::string& what) {
    return Error(fmt::format("{}: tensor '{}': {}", path, name, what));
  };
  if (!e.is_object())
    throw bad(fmt::format("a JSON {}, expected {{dtype, shape, data_offsets}}", e.type_name()));
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    if (!e.contains(key))
      throw bad(fmt::format("no '{}'", key));
  }
  if (!e["dtype"].is_string())
    throw bad("dtype is not a string");
  const torch::Dtype dt =
      dtype_from_code(e["dtype"].get<std::string>(), path + ": tensor '" + name + "'");
  const auto& shape_j = e["shape"];
  if (!shape_j.is_array())
    throw bad("shape is not a list");
  std::vector<int64_t> shape;
  uint64_t numel = 1;
  for (const auto& d : shape_j) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0)) {
      throw bad(fmt::format("shape {}: every size must be a non-negative integer", shape_j.dump()));
    }
    const uint64_t v = d.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX) || __builtin_mul_overflow(numel, v, &numel)) {
      throw bad(fmt::format("shape {} has more elements than can exist", shape_j.dump()));
    }
    shape.push_back(static_cast<int64_t>(v));
  }
  const uint64_t element = static_cast<uint64_t>(c10::elementSize(dt));
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(numel, element, &bytes) || bytes > data_size) {
    throw bad(fmt::format(
        "shape {} of {} needs {} elements, more than the {} bytes of data the file holds",
        shape_j.dump(),
        e["dtype"].get<std::string>(),
        numel,
        data_size));
  }
  const auto& offs_j = e["data_offsets"];
  if (!offs_j.is_array() || offs_j.size() != 2 || !offs_j[0].is_number_unsigned() ||
      !offs_j[1].is_number_unsigned()) {
    throw bad(fmt::format("data_offsets {}: expected [begin, end], two non-negative integers",
                          offs_j.dump()));
  }
  const uint64_t begin = offs_j[0].get<uint64_t>(), end = offs_j[1].get<uint64_t>();
  if (begin > end || end > data_size || end - begin != bytes) {
    throw bad(
        fmt::format("data_offsets [{}, {}] (bytes {} to {} of the file) do not hold its {} bytes "
                    "within the {} "
                    "bytes of data (file truncated?)",
                    begin,
                    end,
                    data_start + begin,
                    data_start + end,
                    bytes,
                    data_size));
  }
  auto t = torch::empty(shape, torch::TensorOptions().dtype(dt));
  in.seekg(static_cast<std::streamoff>(data_start + begin));
  if (bytes > 0 &&
      !in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(bytes))) {
    throw bad(
        fmt::format("bytes {} to {} could not be read", data_start + begin, data_start + end));
  }
  return t;
}

}  // namespace

TensorFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(fmt::format("{}: cannot open checkpoint", path));
  }
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint64_t n = 0;
  const nlohmann::ordered_json header = read_header(in, path, file_size, n);
  TensorFile out;
  const uint64_t data_start = 8 + n;
  const uint64_t data_size = file_size - data_start;  // the byte buffer the offsets index
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__")
      read_metadata(*it, path, out);
    else
      out.tensors.emplace_back(it.key(),
                               read_tensor(in, path, it.key(), *it, data_start, data_size));
  }
  return out;
}

int64_t training_step_of(const TensorFile& file, const std::string& path) {
  auto it = file.metadata.find("step");
  LENGEN_CHECK(it != file.metadata.end(), "{}: not a lengen training checkpoint (no step)", path);
  const auto step = leading_integer(it->second);
  LENGEN_CHECK(step && step->used == it->second.size() && step->value >= 0,
               "{}: the checkpoint's step is \"{}\", expected a step count",
               path,
               it->second);
  return step->value;
}

}  // namespace lengen
