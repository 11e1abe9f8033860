// gspo's own version: `gspo --version` and the provenance eval summaries record. Keep equal to project(VERSION) in
// CMakeLists.txt.
#pragma once

namespace gspo::core {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace gspo::core
