// What the verifiers that run a model on the device share (model_reward.h: a reward model's score; judge.h: a judge's
// verdict or judgement): the dtype they compute in, rows packed into passes under a token budget, and their totals.
#pragma once
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "gspo/config/choices.h"
#include "gspo/reward/verifier.h"

namespace gspo::reward {

// reward.model_dtype: float32 or bfloat16 as asked; auto = bfloat16 on CUDA, float32 on the CPU.
c10::ScalarType score_dtype(config::ScoreDtype d, c10::Device device);

// A row to run: its place in the call and its ids.
struct Pending {
  size_t index;
  std::vector<int64_t> ids;
};

// Sorts `rows` longest first and packs them into passes of rows x (longest row + extra) <= budget tokens, each pass
// at least one row (`extra`: columns a pass adds to every row, e.g. the tokens a judge may write).
std::vector<std::vector<const Pending*>> passes_of(std::vector<Pending>& rows, int64_t budget, int64_t extra = 0);

}  // namespace gspo::reward
