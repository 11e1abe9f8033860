#include "gspo/core/log.h"

#include <atomic>
#include <cstdlib>

#include "gspo/core/error.h"
#include "gspo/core/log_sink.h"

namespace gspo::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
bool g_explicit = false;  // set by --log-level or GSPO_LOG_LEVEL (set_level), which a config does not override

// Parses and applies `level`; ConfigError when it is not one of the names.
void apply_level(const std::string& level) {
  static const std::pair<const char*, Level> kLevels[] = {{"trace", Level::kTrace}, {"debug", Level::kDebug},
                                                          {"info", Level::kInfo},   {"warn", Level::kWarn},
                                                          {"error", Level::kError}, {"off", Level::kOff}};
  for (const auto& [name, lvl] : kLevels) {
    if (level == name) {
      g_level = static_cast<int>(lvl);
      sink::set_level(static_cast<int>(lvl));
      return;
    }
  }
  throw ConfigError("log level must be one of trace, debug, info, warn, error, off (got '" + level + "')");
}
}  // namespace

void set_level(const std::string& level) {
  apply_level(level);
  g_explicit = true;
}

void init_from_env() {
  const char* env = std::getenv("GSPO_LOG_LEVEL");
  if (env && *env) {
    try {
      set_level(env);
    } catch (const ConfigError& e) {
      throw ConfigError(std::string("GSPO_LOG_LEVEL: ") + e.what());
    }
  }
}

void set_level_from_config(const std::string& level, const std::string& quieter_if_default) {
  if (!g_explicit) apply_level(level == "info" && !quieter_if_default.empty() ? quieter_if_default : level);
}

bool enabled(Level level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

void write(Level level, const std::string& message) {
  sink::write(static_cast<int>(level), message.data(), message.size());
}

}  // namespace gspo::log
