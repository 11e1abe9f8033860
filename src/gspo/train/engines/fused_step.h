// The replicated update's per-parameter work in torch's multi-tensor kernels (#53 item 4): torch::optim::AdamW::step
// runs about a dozen element-wise kernels a parameter and torch::nn::utils::clip_grad_norm_ two (a 28-layer model's
// ~310 parameters: ~4,300 launches a step on a GPU); aten::_fused_adamw_ and the _foreach_ kernels take a few per
// device, dtype and step count. Same state, same numbers within float rounding, same checkpoint files.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace gspo::train {

// The step torch::optim::AdamW::step would take (decoupled weight decay, bias-corrected moments; amsgrad refused), on
// the optimizer's own state (moments, step counts: io::save_optimizer writes them as before), element for element
// within float rounding, at learning rate `lr` for every group. Parameters without a gradient are skipped and keep
// their step count, as there.
void fused_adamw_step(torch::optim::AdamW& opt, double lr);

// torch::nn::utils::clip_grad_norm_(params, max_norm) (L2): the total norm of the gradients, which are scaled by
// min(1, max_norm / (norm + 1e-6)); non-finite norms as there. Returns the norm before clipping (one host read).
double clip_grad_norm_fused(const std::vector<at::Tensor>& params, double max_norm);

}  // namespace gspo::train
