#include "gspo/core/log_sink.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace gspo::log::sink {
namespace {

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> instance = [] {
    auto l = spdlog::stderr_color_mt("gspo");
    l->set_pattern("[%H:%M:%S] %^%l%$ %v");
    l->set_level(spdlog::level::trace);  // filtering happens in log.cpp
    return l;
  }();
  return *instance;
}

spdlog::level::level_enum to_spdlog(int level) {
  switch (level) {
    case 0: return spdlog::level::trace;
    case 1: return spdlog::level::debug;
    case 2: return spdlog::level::info;
    case 3: return spdlog::level::warn;
    case 4: return spdlog::level::err;
    default: return spdlog::level::off;
  }
}

}  // namespace

void set_level(int level) { logger().set_level(to_spdlog(level)); }

void write(int level, const char* message, std::size_t size) {
  logger().log(to_spdlog(level), spdlog::string_view_t(message, size));
}

}  // namespace gspo::log::sink
