// optimizer.state_bits 8 over replicated parameters (the plain and the low-rank-adapter engines): bitsandbytes'
// AdamW8bit, per tensor, each tensor's moments in the sharded engines' store (parallel/shard_moments.h, one store for
// every engine). A tensor of kMin8bitSize (4096) elements or more keeps its moments as 8-bit codes with an absmax per
// 256 (parallel/adamw8bit.h: 2.03 bytes a parameter); a smaller one keeps float32 moments, stepped as torch's AdamW
// (parallel::adamw_shard_step), as bitsandbytes keeps them in 32 bits. Step counts per tensor.
//
// Checkpoint (optimizer_8bit.pt): 5 tensors a parameter, as they are held (no float32 round trip, so a resume
// continues bit for bit): step [1] int64; exp_avg (uint8 codes, or float32); its absmax (float32, empty when float32);
// exp_avg_sq; its absmax.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gspo/config/options.h"
#include "gspo/parallel/adamw8bit.h"
#include "gspo/parallel/shard_moments.h"

namespace gspo::train {

class AdamW8bit {
 public:
  AdamW8bit(std::vector<at::Tensor> params, const config::OptimizerOptions& o);
  void step(double lr);
  int64_t state_bytes() const;
  std::vector<at::Tensor> state() const;  // the checkpoint's list, on the host
  void load_state(const std::vector<at::Tensor>& s, const std::string& from);
  bool quantized(size_t i) const { return slots_.at(i).moments->bits() == 8; }

 private:
  struct Slot {
    int64_t step = 0;
    std::unique_ptr<parallel::ShardMoments> moments;  // the tensor's, flat: 8 bits, or 32 below kMin8bitSize
  };
  std::vector<at::Tensor> params_;
  std::vector<Slot> slots_;
  parallel::AdamWHyper h_;
};

}  // namespace gspo::train
