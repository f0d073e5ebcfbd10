#pragma once

#include "lengen/core/export.h"

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace lengen {

/// Writes TensorBoard event files without TensorFlow:
/// `DIR/events.out.tfevents.<time>.<host>.<pid>`, one TFRecord per Event protobuf (uint64 length,
/// masked CRC-32C of the length, the bytes, masked CRC-32C of the bytes), the first a
/// `file_version: "brain.Event:2"` record. A run writes RUN/tensorboard/ (training scalars,
/// accuracy per grid cell, the heatmap/curve PNG); `tensorboard --logdir runs/` shows every run. A
/// resumed run adds a new file (TensorBoard reads them all). Records are flushed as written, so a
/// killed run keeps what it logged.
class LENGEN_API EventWriter {
 public:
  explicit EventWriter(const std::string& dir);
  /// A scalar (Summary.Value.simple_value, a float) at `step`.
  void scalar(const std::string& tag, int64_t step, double value);
  /// A PNG image (Summary.Value.image); its size is read from the PNG header.
  void image(const std::string& tag, int64_t step, const std::string& png);

  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);
  std::string path_;
  std::ofstream out_;
};

/// Masked CRC-32C (Castagnoli) as TFRecord stores it: ((c >> 15) | (c << 17)) + 0xa282ead8.
LENGEN_API uint32_t masked_crc32c(const std::string& bytes);
/// Plain CRC-32C of `bytes` (crc32c("123456789") == 0xE3069283).
LENGEN_API uint32_t crc32c(const std::string& bytes);

/// The records of an event file, each checked against both CRCs; throws lengen::Error naming
/// the file and the offset of a torn or corrupt record.
LENGEN_API std::vector<std::string> read_event_records(const std::string& path);

}  // namespace lengen
