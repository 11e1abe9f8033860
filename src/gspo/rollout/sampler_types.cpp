#include "gspo/rollout/sampler_types.h"

#include <torch/torch.h>

#include <algorithm>

namespace gspo::rollout {

const char* finish_name(Finish f) {
  switch (f) {
    case Finish::kEos: return "eos";
    case Finish::kStop: return "stop";
    case Finish::kLength: return "length";
    case Finish::kMaxTurns: return "max_turns";
    case Finish::kCarried: return "carried";
  }
  return "?";
}

Schedule schedule_for(int64_t rows, int64_t budget_rows, bool continuous, bool has_slots, bool live_keys) {
  if (budget_rows >= rows) return continuous && has_slots && live_keys ? Schedule::kSlotPool : Schedule::kAllRows;
  return continuous && has_slots ? Schedule::kSlotPool : Schedule::kStaticBatches;
}

int64_t rows_in_budget(int64_t budget_bytes, int64_t row_bytes, int64_t rows) {
  return std::min(rows, budget_bytes / std::max<int64_t>(row_bytes, 1));
}

std::vector<int64_t> RolloutBatch::trained_tokens() const {
  auto sums = loss_mask.sum(1).to(torch::kLong).contiguous();
  return {sums.data_ptr<int64_t>(), sums.data_ptr<int64_t>() + sums.numel()};
}

int64_t RolloutBatch::generated_tokens() const { return static_cast<int64_t>(loss_mask.sum().item<double>()); }

}  // namespace gspo::rollout
