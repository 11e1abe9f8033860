#include "gspo/core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

#include "gspo/core/error.h"

namespace gspo::log {
namespace {
void ensure_stderr_logger() {
  static bool done = false;
  if (done) return;
  auto logger = spdlog::stderr_color_mt("gspo");
  logger->set_pattern("[%H:%M:%S] %^%l%$ %v");
  spdlog::set_default_logger(logger);
  done = true;
}
}  // namespace

void set_level(const std::string& level) {
  ensure_stderr_logger();
  static const std::pair<const char*, spdlog::level::level_enum> kLevels[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug}, {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"error", spdlog::level::err},   {"off", spdlog::level::off}};
  for (const auto& [name, lvl] : kLevels) {
    if (level == name) {
      spdlog::set_level(lvl);
      return;
    }
  }
  throw ConfigError("log level must be one of trace, debug, info, warn, error, off (got '" + level + "')");
}

void init_from_env() {
  ensure_stderr_logger();
  const char* env = std::getenv("GSPO_LOG_LEVEL");
  if (env && *env) {
    try {
      set_level(env);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("GSPO_LOG_LEVEL: ") + e.what());
    }
  }
}

}  // namespace gspo::log
