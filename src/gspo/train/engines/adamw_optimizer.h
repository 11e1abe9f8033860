// The replicated engine's optimizer (train/engines/update_engine.cpp, AdamWEngine) by optimizer.state_bits: torch's
// AdamW through the fused step with float32 moments (32, checkpoint file optimizer.pt), or bitsandbytes' 8-bit AdamW
// (8, parallel/adamw8bit.h; optimizer_8bit.pt). Each refuses the other's checkpoint (io::wrong_state_bits: a
// resume never converts the moments' precision; docs/optimizer.md).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gspo/config/options.h"

namespace gspo::train {

inline constexpr const char* kAdamW8bitFile = "optimizer_8bit.pt";  // optimizer.state_bits 8's moments

class AdamWOptimizer {
 public:
  virtual ~AdamWOptimizer() = default;
  // One AdamW step at `lr` over the parameters with a gradient (the others keep their moments and step count).
  virtual void step(double lr) = 0;
  virtual int64_t state_bytes() const = 0;  // bytes of moments held, read off the tensors
  virtual void save(const std::string& dir) = 0;
  virtual void load(const std::string& dir) = 0;  // ConfigError when written with the other state_bits
};

// `params`: float32, what the engine updates; they must outlive the optimizer.
std::unique_ptr<AdamWOptimizer> make_adamw_optimizer(std::vector<at::Tensor> params, const config::OptimizerOptions& o);

}  // namespace gspo::train
