// Reading a checkpoint back before resuming from it, so `--resume auto` can pass over a damaged newest checkpoint
// (a torn write, a corrupt optimizer.pt) to the newest intact one instead of failing, and say so.
#pragma once
#include <ATen/core/Tensor.h>

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

// What a resume reads is checked before it is used (checkpoint_damage reads bytes, not values): IoError naming `file`
// and `what` ("parameter 'lm_head.weight'", "tensor 3 (exp_avg_sq)") when a floating-point tensor holds NaN or Inf;
// other dtypes pass. One isfinite().all() a tensor (the count only on failure): cheap beside reading the file.
void require_finite(const at::Tensor& t, const std::string& file, const std::string& what);
// An optimizer's step count read back: IoError naming `file` and `what` when negative (AdamW's bias correction would
// divide by zero or grow without bound).
void require_step_count(int64_t step, const std::string& file, const std::string& what);
// The name of tensor k of one group of AdamW moments as the optimizers hold them: `n` 2, float32 {exp_avg,
// exp_avg_sq}; `n` 4, 8 bits {exp_avg codes, exp_avg absmax, exp_avg_sq codes, exp_avg_sq absmax}.
std::string moment_name(size_t k, size_t n);
// The one refusal of a checkpoint whose AdamW moments were written with the other optimizer.state_bits (8 or 32: a
// resume never converts the moments' precision), for every engine: ConfigError "<where> holds <whose>AdamW moments of
// optimizer.state_bits <written>; resume it with state_bits <written> (...)". `where` names the checkpoint or file
// ("checkpoint 'DIR'", "'FILE'"), `whose` the engine's part ("", "ZeRO-1 ", "ZeRO-3 ", "the experts' ").
[[noreturn]] void wrong_state_bits(const std::string& where, const std::string& whose, int64_t written);

}  // namespace gspo::io
