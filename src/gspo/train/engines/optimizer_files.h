// The optimizer-state files the update engines write into a checkpoint directory, named once: each engine reads its
// own and refuses a checkpoint holding another engine's (wrong_engine below). Replicated AdamW's
// optimizer.pt is named by io::save_optimizer.
#pragma once
#include <cstdint>
#include <string>

namespace gspo::train {

inline constexpr const char* kZero1File = "optimizer_zero1.pt";  // ZeRO-1's moments, and expert parallelism's dense ones
// ZeRO-3: one file a rank.
inline std::string zero3_file(int64_t rank) { return "optimizer_zero3_rank" + std::to_string(rank) + ".pt"; }
// Expert parallelism: the moments of expert group g's experts.
inline std::string expert_file(int64_t group) { return "optimizer_experts_" + std::to_string(group) + ".pt"; }

// Whether checkpoint `dir` holds ZeRO-3 shard files (zero3_engine.cpp).
bool written_by_zero3(const std::string& dir);
// ConfigError: checkpoint `dir` was written by the engine of distributed.zero_stage `written` (update_engine.cpp).
[[noreturn]] void wrong_engine(const std::string& dir, int64_t written);
// The engine's own optimizer file `file` is not in checkpoint `dir`: wrong_engine naming the stage whose files it
// holds, or, holding no engine's, IoError naming `file` (never a guessed stage).
[[noreturn]] void missing_state(const std::string& dir, const std::string& file);

}  // namespace gspo::train
