#include "gspo/train/sources/sampling_copy.h"

#include <torch/torch.h>

#include "gspo/core/clock.h"
#include "gspo/model/lora.h"

namespace gspo::train {

double SamplingCopy::refresh() {
  if (!stale_) return 0;
  const auto t = core::Clock::now();
  torch::NoGradGuard g;
  if (lora_) {
    lora_->merge_into(copy_);  // only the targeted weights change: the rest of the copy is the frozen base
  } else {
    auto dst = copy_.parameters();
    auto src = policy_.parameters();
    for (size_t i = 0; i < dst.size(); ++i)
      if (!dst[i].is_same(src[i])) dst[i].copy_(src[i]);  // a view of the policy (ZeRO-3 adapters): nothing to copy
  }
  stale_ = false;
  return core::seconds_since(t);
}

}  // namespace gspo::train
