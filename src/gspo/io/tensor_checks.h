// The values a resume reads back, checked before they are used (checkpoint_check.h reads bytes, not values), and the
// names and refusals every optimizer's checkpoint files share: a leaf of io/, included by the checkpoint readers and the
// update engines.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace gspo::io {

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
