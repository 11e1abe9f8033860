// Reading a checkpoint back before resuming from it, so `--resume auto` can pass over a damaged newest checkpoint
// (a torn write, a corrupt optimizer.pt) to the newest intact one instead of failing, and say so.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gspo::io {

// "" when state.json parses with non-negative counters and every .pt file in `dir` opens as an archive whose
// records all read back (each is decompressed and checked); otherwise the first problem, naming the file.
// Reads every byte of the checkpoint once.
std::string checkpoint_damage(const std::string& dir);

struct IntactCheckpoint {
  std::optional<std::string> dir;                            // newest checkpoint that reads back, if any
  std::vector<std::pair<std::string, std::string>> damaged;  // newer ones passed over: (dir, problem)
};
IntactCheckpoint latest_intact_checkpoint(const std::string& run_dir);

}  // namespace gspo::io
