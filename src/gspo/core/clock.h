// Wall-clock intervals for the timings a run reports.
#pragma once
#include <chrono>

namespace gspo::core {

using Clock = std::chrono::steady_clock;

// Seconds from `t` to now.
inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace gspo::core
