// TensorBoard event files written natively (logging.tensorboard): the run's metrics as scalars while it trains, so
// `tensorboard --logdir runs/` shows it live. No TensorFlow or protobuf library: an event file is a sequence of
// records (uint64 length, masked CRC-32C of the length, the bytes, masked CRC-32C of the bytes), each an `Event`
// protocol buffer, and the few messages needed (Event, Summary.Value, a text tensor) are encoded here by hand.
// tests/cli/check_tensorboard.py reads the files back with the pinned tensorboard package's own reader.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace gspo::io {

// CRC-32C (Castagnoli), and TensorBoard's masked form of it.
uint32_t crc32c(const uint8_t* data, size_t n);
uint32_t masked_crc32c(const uint8_t* data, size_t n);

class EventWriter {
 public:
  // Creates DIR (and parents) and a new event file in it, events.out.tfevents.<seconds>.<host>.gspo, starting with the
  // file-version event. Throws IoError.
  explicit EventWriter(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  void scalar(const std::string& tag, double value, int64_t step);
  void text(const std::string& tag, const std::string& text, int64_t step);
  // Every number of one metrics.jsonl line (an object with "step") as scalars at that step: numbers under their key,
  // arrays of numbers as KEY/0, KEY/1, ..., objects of numbers as KEY/NAME; strings and booleans left out. Flushed.
  void metrics_line(const std::string& json_line);
  void flush();
  const std::string& path() const { return path_; }

 private:
  void record(const std::string& event);  // one framed record
  std::string path_;
  std::FILE* f_ = nullptr;
};

// logging.tensorboard for a run (rank 0): null when `setting` is empty or "false"; else a writer in DIR ("true":
// RUN_DIR/tensorboard) whose earlier gspo event files are removed and rewritten from `metrics_path` (as cut back to
// the checkpoint on a resume, so each step appears once), after the resolved config as text.
std::unique_ptr<EventWriter> open_run_events(const std::string& setting, const std::string& run_dir,
                                             const std::string& metrics_path, const std::string& config_yaml);

}  // namespace gspo::io
