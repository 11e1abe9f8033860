// Logging behind our own small interface over spdlog. Level from --log-level or GSPO_LOG_LEVEL
// (trace, debug, info, warn, error, off); info by default. Logs go to stderr so stdout stays machine-readable.
#pragma once
#include <spdlog/spdlog.h>
#include <string>

namespace gspo::log {

// Throws ConfigError naming the value when `level` is not one of the names above.
void set_level(const std::string& level);
// Applies GSPO_LOG_LEVEL when set; called once by main before parsing flags.
void init_from_env();

template <class... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) { spdlog::info(fmt, std::forward<Args>(args)...); }
template <class... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) { spdlog::warn(fmt, std::forward<Args>(args)...); }
template <class... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) { spdlog::debug(fmt, std::forward<Args>(args)...); }
template <class... Args>
void error(spdlog::format_string_t<Args...> fmt, Args&&... args) { spdlog::error(fmt, std::forward<Args>(args)...); }

}  // namespace gspo::log
