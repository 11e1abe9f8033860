// The spdlog side of logging (log_sink.cpp, its own CMake target without LibTorch on the include path, so spdlog
// sees Debian's fmt rather than the newer one inside torch's headers). Plain types only.
#pragma once
#include <cstddef>

namespace gspo::log::sink {

// Levels as log::Level's values (0 trace .. 5 off).
void set_level(int level);
void write(int level, const char* message, std::size_t size);

}  // namespace gspo::log::sink
