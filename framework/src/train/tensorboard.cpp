// TensorBoard event files: TFRecord framing with CRC-32C and hand-encoded Event protobufs
// (tensorflow/core/util/event.proto, framework/summary.proto field numbers).
#include "lengen/train/tensorboard.h"

#include "lengen/core/error.h"

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

namespace fs = std::filesystem;

namespace lengen {

namespace {

const std::array<uint32_t, 256>& crc_table() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) {
        c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli polynomial
      }
      t[i] = c;
    }
    return t;
  }();
  return table;
}

// Protobuf wire format: varints, keys, length-delimited fields, fixed-width numbers.
void varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void key(std::string& out, int field, int wire) {
  varint(out, static_cast<uint64_t>(field << 3 | wire));
}

void bytes_field(std::string& out, int field, const std::string& b) {
  key(out, field, 2);
  varint(out, b.size());
  out += b;
}

template <class T>
void fixed(std::string& out, int field, T v) {
  key(out, field, sizeof(T) == 8 ? 1 : 5);
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));  // little-endian hosts (x86-64, aarch64)
  out.append(buf, sizeof(T));
}

std::string event(int64_t step, const std::string& summary_or_version, bool version) {
  std::string e;
  const double wall =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  fixed(e, 1, wall);  // wall_time
  key(e, 2, 0);       // step
  varint(e, static_cast<uint64_t>(step));
  bytes_field(e, version ? 3 : 5, summary_or_version);  // file_version | summary
  return e;
}

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}

std::string le32(uint32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

}  // namespace

uint32_t crc32c(const std::string& bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) {
    c = crc_table()[(c ^ b) & 0xFF] ^ (c >> 8);
  }
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(const std::string& bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

EventWriter::EventWriter(const std::string& dir) {
  fs::create_directories(dir);
  char host[256] = "host";
  ::gethostname(host, sizeof(host) - 1);
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  path_ =
      (fs::path(dir) / fmt::format("events.out.tfevents.{}.{}.{}",
                                   std::chrono::duration_cast<std::chrono::seconds>(now).count(),
                                   host,
                                   ::getpid()))
          .string();
  out_.open(path_, std::ios::binary | std::ios::app);
  LENGEN_CHECK(out_.good(), "{}: cannot open for writing", path_);
  write_event(event(0, "brain.Event:2", true));
}

void EventWriter::write_event(const std::string& e) {
  const std::string len = le64(e.size());
  out_ << len << le32(masked_crc32c(len)) << e << le32(masked_crc32c(e));
  out_.flush();
  LENGEN_CHECK(out_.good(), "{}: write failed: {}", path_, std::strerror(errno));
}

void EventWriter::scalar(const std::string& tag, int64_t step, double v) {
  std::string value;
  bytes_field(value, 1, tag);              // tag
  fixed(value, 2, static_cast<float>(v));  // simple_value
  std::string summary;
  bytes_field(summary, 1, value);  // repeated Value value = 1
  write_event(event(step, summary, false));
}

void EventWriter::image(const std::string& tag, int64_t step, const std::string& png) {
  LENGEN_CHECK(png.size() >= 24 && png.compare(1, 3, "PNG") == 0, "{}: not a PNG image", tag);
  auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(png[at])) << 24) |
           (static_cast<uint32_t>(static_cast<unsigned char>(png[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<unsigned char>(png[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<unsigned char>(png[at + 3]));
  };
  std::string img;
  key(img, 1, 0);
  varint(img, be32(20));  // height (IHDR)
  key(img, 2, 0);
  varint(img, be32(16));  // width
  key(img, 3, 0);
  varint(img, 4);  // colorspace RGBA
  bytes_field(img, 4, png);
  std::string value;
  bytes_field(value, 1, tag);
  bytes_field(value, 4, img);
  std::string summary;
  bytes_field(summary, 1, value);
  write_event(event(step, summary, false));
}

std::vector<std::string> read_event_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LENGEN_CHECK(in.good(), "{}: cannot read", path);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> out;
  size_t at = 0;
  while (at < data.size()) {
    LENGEN_CHECK(at + 12 <= data.size(), "{}: torn record header at byte {}", path, at);
    uint64_t len = 0;
    uint32_t crc = 0;
    std::memcpy(&len, data.data() + at, 8);
    std::memcpy(&crc, data.data() + at + 8, 4);
    LENGEN_CHECK(
        crc == masked_crc32c(data.substr(at, 8)), "{}: bad length CRC at byte {}", path, at);
    LENGEN_CHECK(at + 12 + len + 4 <= data.size(), "{}: torn record at byte {}", path, at);
    std::string rec = data.substr(at + 12, len);
    std::memcpy(&crc, data.data() + at + 12 + len, 4);
    LENGEN_CHECK(crc == masked_crc32c(rec), "{}: bad data CRC at byte {}", path, at);
    out.push_back(std::move(rec));
    at += 12 + len + 4;
  }
  return out;
}

}  // namespace lengen
