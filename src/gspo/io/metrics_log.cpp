#include "gspo/io/metrics_log.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"

namespace gspo::io {
using core::atomic_write;
using core::exists;
using core::read_text;

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw IoError("cannot open metrics file '" + path + "': " + std::strerror(errno));
}

void MetricsLog::append(const std::string& line) {
  out_ << line << "\n";
  out_.flush();
  if (!out_) throw IoError("cannot write metrics file '" + path_ + "'");
}

MetricsLog::Dropped MetricsLog::truncate_after(const std::string& path, int64_t step) {
  Dropped dropped;
  if (!exists(path)) return dropped;
  std::istringstream in(read_text(path));
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      if (j.value("step", int64_t{0}) > step) {
        ++dropped.later_steps;
        continue;
      }
    } catch (const nlohmann::json::exception&) {
      ++dropped.torn;  // a line torn by a crash
      continue;
    }
    kept += line + "\n";
  }
  atomic_write(path, kept);
  return dropped;
}

}  // namespace gspo::io
