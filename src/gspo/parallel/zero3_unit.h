// Private to src/gspo/parallel (zero3.cpp, zero3_grads.cpp, zero3_adamw.cpp, zero3_checkpoint.cpp): what ZeRO-3 keeps
// per unit (zero3.h), each unit cut by shard_layout.h.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gspo/parallel/shard_layout.h"
#include "gspo/parallel/shard_moments.h"
#include "gspo/parallel/zero3.h"

namespace gspo::parallel {

struct Zero3::Unit {
  std::vector<at::Tensor> params;            // the policy's parameters (their data swapped in and out)
  std::vector<std::vector<int64_t>> shapes;  // their whole shapes
  std::vector<int64_t> numels;               // their element counts
  int64_t numel = 0, shard = 0;
  at::Tensor master, grad;                      // float32 [shard]
  std::unique_ptr<ShardMoments> moments;        // AdamW's of the shard (hyper.state_bits); none when frozen
  at::Tensor full;                              // the gathered flat buffer (training dtype) while held
  int64_t holds = 0;                            // acquire()s not yet released, plus the whole-model holds
  std::vector<char> used;                       // per parameter: had a gradient on some rank (kept)
  std::vector<char> local;                      // per parameter: had one on this rank since the last reduce
  at::Tensor active;                            // bool [shard]: elements of used parameters (active_mask)
};

}  // namespace gspo::parallel
