// AdamW on a flat shard, what every optimizer of parallel/ steps: its hyper-parameters (and the sharded optimizers'
// moment store choice) and the float32 step, element for element torch::optim::AdamW's. The 8-bit step is adamw8bit.h;
// the store that picks one of them is shard_moments.h.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace gspo::parallel {

struct AdamWHyper {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
  // The sharded optimizers' moments (ShardedAdamW, Zero3): optimizer.state_bits, 32 or 8 (shard_moments.h).
  int64_t state_bits = 32;
  // distributed.optimizer_offload: the moments (and Zero3's float32 masters) in host memory, stepped there.
  bool offload = false;
};

// One AdamW step on a flat shard, element for element the sequence of torch::optim::AdamW::step: p, exp_avg and
// exp_avg_sq are updated in place where `active` (bool, same length) is true and left untouched elsewhere (parameters
// no rank has a gradient for); an undefined `active`: everywhere. `step` counts from 1.
void adamw_shard_step(at::Tensor& p, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
                      const at::Tensor& active, double lr, int64_t step, const AdamWHyper& h);

}  // namespace gspo::parallel
