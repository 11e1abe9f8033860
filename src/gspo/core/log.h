// Logging behind our own small interface. Level from --log-level or GSPO_LOG_LEVEL (trace, debug, info, warn,
// error, off); info by default. Logs go to stderr so stdout stays machine-readable.
//
// Messages are formatted here with the fmt that LibTorch's headers carry (header-only); spdlog, built against
// Debian's older fmt, is confined to log_sink.cpp, the one translation unit that sees neither torch nor this header.
#pragma once
#include <fmt/format.h>

#include <string>
#include <utility>

namespace gspo::log {

enum class Level { kTrace = 0, kDebug, kInfo, kWarn, kError, kOff };

// Throws ConfigError naming the value when `level` is not one of the names above.
void set_level(const std::string& level);
// Applies GSPO_LOG_LEVEL when set; called once by main before parsing flags.
void init_from_env();
// A config's logging.level: applied only when neither --log-level nor GSPO_LOG_LEVEL chose one (those win).
// `quieter_if_default` is the level used instead when the config left the default "info" (ranks > 0: "warn").
void set_level_from_config(const std::string& level, const std::string& quieter_if_default = "");
// True when messages at `level` are printed.
bool enabled(Level level);
// Prints one formatted message (no level check).
void write(Level level, const std::string& message);

template <class... Args>
void log_at(Level level, fmt::format_string<Args...> f, Args&&... args) {
  if (enabled(level)) write(level, fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void info(fmt::format_string<Args...> f, Args&&... args) { log_at(Level::kInfo, f, std::forward<Args>(args)...); }
template <class... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) { log_at(Level::kWarn, f, std::forward<Args>(args)...); }
template <class... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) { log_at(Level::kDebug, f, std::forward<Args>(args)...); }
template <class... Args>
void error(fmt::format_string<Args...> f, Args&&... args) { log_at(Level::kError, f, std::forward<Args>(args)...); }

}  // namespace gspo::log
