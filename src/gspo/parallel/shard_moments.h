// The AdamW moments of one flat shard of the sharded optimizers (ZeRO-1's shard, each ZeRO-3 unit's, expert
// parallelism's two ZeRO-1 sets), chosen once when the optimizer is built (optimizer.state_bits,
// distributed.optimizer_offload); the step calls step() and never looks at the choice (docs/optimizer.md).
//   32: float32 exp_avg and exp_avg_sq [n], stepped element for element as torch::optim::AdamW (adamw_shard_step).
//   8:  bitsandbytes' blockwise 8-bit moments of the shard as one flat tensor (adamw8bit.h): uint8 codes [n] and a
//       float32 absmax per 256 elements, stepped kStepChunk elements at a time (no float32 copy of the shard's state).
//       The shard starts on a block boundary of the flat layout (shard_align, shard_layout.h), so block b of the flat
//       vector holds the same codes and absmax at every world size: a re-cut copies them as they are. Every element of
//       the shard is quantised, small tensors included (bitsandbytes' per-tensor min_8bit_size does not apply to a
//       flat shard: docs/optimizer.md says why and what it costs).
//   offload: either kind held in host memory; a step copies the shard's parameters, gradient and mask (when there is
//       one) to the host a chunk at a time (pinned staging buffers when CUDA is there), steps them there and copies the
//       parameters back: per step 9 bytes an element device to host (float32 parameter and gradient, bool mask) and 4
//       back.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gspo/parallel/adamw_step.h"

namespace gspo::parallel {

class ShardMoments {
 public:
  virtual ~ShardMoments() = default;
  // One AdamW step (`step` counts from 1) of the flat shard `p`, in place, where `active` (bool, same length) is true;
  // elsewhere p and the moments' values are kept (adamw_shard_step, adamw8bit_step). An undefined `active` steps every
  // element (the replicated engine's 8-bit AdamW: no mask built, none tested on the device).
  virtual void step(at::Tensor& p, const at::Tensor& grad, const at::Tensor& active, double lr, int64_t step,
                    const AdamWHyper& h) {
    step_range(p, grad, active, lr, step, h, 0);
  }
  // step() on the shard's elements [offset, offset + p.numel()) alone (p, grad and active being those), the moments'
  // device; with 8 bits `offset` is on a block boundary.
  virtual void step_range(at::Tensor& p, const at::Tensor& grad, const at::Tensor& active, double lr, int64_t step,
                          const AdamWHyper& h, int64_t offset) = 0;
  // The state as held, views not copies: 32: {exp_avg, exp_avg_sq} float32 [n]; 8: {exp_avg codes uint8 [n], their
  // absmax float32 [ceil(n / 256)], exp_avg_sq codes, their absmax}.
  virtual std::vector<at::Tensor> tensors() const = 0;
  virtual int64_t bits() const = 0;
  // Bytes the steps so far staged through the host buffers (offload; else 0): 13 a shard element a step (12 unmasked),
  // 9 in and 4 out, what crosses to and from a GPU when the shard's parameters live there (ZeRO-3's host masters: 5).
  virtual int64_t transferred_bytes() const { return 0; }
  int64_t bytes() const;
  // All moments 0, as before the first step (what a load starts from; the padding's exp_avg codes stay the code of 0).
  virtual void zero();
  // Elements per entry of tensors()[k]: 1 (a moment or codes) or 256 (an absmax).
  int64_t per(size_t k) const { return bits() == 8 && k % 2 == 1 ? 256 : 1; }
  // Flat elements [src, src + n) of `from` (tensors() of another shard, or of the whole flat vector: gather()) into this
  // shard's [dst, dst + n); with 8 bits src and dst are on block boundaries (std::invalid_argument otherwise).
  void copy_from(const std::vector<at::Tensor>& from, int64_t src, int64_t dst, int64_t n);
  // `from` has this store's kind and, for `numel` flat elements, its tensors' sizes.
  bool fits(const std::vector<at::Tensor>& from, int64_t numel) const;
};

// Moments of a shard of n elements for optimizer.state_bits (8 or 32), zeros, on `like`'s device, or with `offload`
// in host memory, stepped `chunk` elements (a multiple of 256) at a time. Elements [real, n) of the shard are the flat
// layout's padding (real < 0: none): with 8 bits their exp_avg codes hold the signed map's code of 0 from the start and
// after every zero(), so a padded block's absmax is its parameters' alone, as in one process, and a checkpoint (which
// holds the parameters' codes only) resumes exactly. (Code 0 is the map's -1: left there by a load, the padding read
// as -absmax and kept the block's absmax up while the moments shrank, #65.)
std::unique_ptr<ShardMoments> make_shard_moments(int64_t state_bits, int64_t n, const at::TensorOptions& like,
                                                 bool offload = false, int64_t chunk = 0, int64_t real = -1);
// What a shard's length must be a multiple of: 256 with 8 bits (kQuantBlock), else 1.
int64_t shard_align(int64_t state_bits);
// Host tensor options for offloaded state: pinned when CUDA is available (faster copies to and from a GPU).
at::TensorOptions host_options(c10::ScalarType dtype);

}  // namespace gspo::parallel
