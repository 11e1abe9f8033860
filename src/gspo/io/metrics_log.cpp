#include "gspo/io/metrics_log.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/io/fs.h"

namespace gspo::io {

MetricsLog::MetricsLog(const std::string& path) : path_(path), out_(path, std::ios::app) {
  if (!out_) throw IoError("cannot open metrics file '" + path + "': " + std::strerror(errno));
}

void MetricsLog::append(const std::string& line) {
  out_ << line << "\n";
  out_.flush();
  if (!out_) throw IoError("cannot write metrics file '" + path_ + "'");
}

void MetricsLog::truncate_after(const std::string& path, int64_t step) {
  if (!exists(path)) return;
  std::istringstream in(read_text(path));
  std::string line, kept;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    try {
      auto j = nlohmann::json::parse(line);
      if (j.value("step", int64_t{0}) > step) continue;
    } catch (const nlohmann::json::exception&) {
      continue;  // a line torn by a crash
    }
    kept += line + "\n";
  }
  atomic_write(path, kept);
}

}  // namespace gspo::io
