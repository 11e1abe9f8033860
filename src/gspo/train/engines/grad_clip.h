// Clipping the gradient by its global L2 norm (optimizer.grad_clip): torch::nn::utils::clip_grad_norm_'s rule, for the
// engines that compute the norm themselves (ZeRO-1, ZeRO-3) and scale the gradient by clip_scale(). The replicated
// AdamW engine clips through clip_grad_norm_fused (fused_step.h) with max_grad_norm().
#pragma once
#include <cmath>

#include "gspo/config/options.h"

namespace gspo::train {

// optimizer.grad_clip as a maximum norm: infinity when it is 0 (clipping off).
inline double max_grad_norm(const config::OptimizerOptions& o) { return o.grad_clip > 0 ? o.grad_clip : INFINITY; }

// What the gradient is multiplied by: max_norm / (norm + 1e-6) where that is below 1, else 1. Non-finite: an
// infinite norm under a finite max_norm gives 0; a NaN norm (or both infinite) gives 1, the gradient left as it is.
inline double clip_scale(double norm, double max_norm) {
  const double coef = max_norm / (norm + 1e-6);
  return coef < 1 ? coef : 1.0;
}

}  // namespace gspo::train
