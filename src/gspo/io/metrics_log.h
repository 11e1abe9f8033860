// RUN/metrics.jsonl: one JSON object per rollout step, appended and flushed as each step ends.
#pragma once
#include <cstdint>
#include <fstream>
#include <string>

namespace gspo::io {

class MetricsLog {
 public:
  // Opens `path` for appending (creating it). Throws IoError.
  explicit MetricsLog(const std::string& path);
  void append(const std::string& json_line);
  const std::string& path() const { return path_; }

  // Keeps only the lines whose "step" is <= `step` (atomic rewrite); used when resuming so the file reads as one
  // uninterrupted run. Returns what was dropped, for the log.
  struct Dropped {
    int64_t later_steps = 0;  // lines of steps after the checkpoint (they are run again)
    int64_t torn = 0;         // lines that are not JSON (a write cut off by a crash)
  };
  static Dropped truncate_after(const std::string& path, int64_t step);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace gspo::io
