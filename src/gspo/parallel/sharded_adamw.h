// AdamW with its moments sharded across the ranks (ZeRO stage 1). The parameters, flattened in order into one
// vector padded to a multiple of the world size, are cut into equal contiguous shards; rank r keeps exp_avg and
// exp_avg_sq for shard r only. One step: gradients reduce-scattered (each rank receives the summed gradient of its
// shard), the global gradient norm all-reduced from the shards' squared norms, AdamW applied to the shard exactly
// as torch::optim::AdamW does element by element, and the updated shards all-gathered into every rank's weights. The
// collectives go a chunk of every shard at a time, read from and written to the parameters in place: no flat copy of
// the whole model exists (transient: the shard's weights, AdamW's temporaries over it, and one chunk x world buffer).
// With hyper.state_bits 8 the moments are bitsandbytes' 8-bit ones (shard_moments.h) and every shard is a whole number
// of 256-element blocks (the flat vector padded to a multiple of 256 x world).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gspo/parallel/adamw_step.h"

namespace gspo::parallel {

class Comm;
class ShardMoments;

class ShardedAdamW {
 public:
  // `chunk`: elements of a rank's shard each collective of a step moves (0: default_chunk); the transient buffers of a
  // step are chunk x world size elements, never a whole flat copy of the parameters.
  ShardedAdamW(std::vector<at::Tensor> params, AdamWHyper hyper, Comm& comm, int64_t chunk = 0);
  ~ShardedAdamW();
  // 2^26 / world elements (a 256 MiB float32 buffer across the ranks), at least 2^16.
  static int64_t default_chunk(int64_t world);
  static constexpr int64_t kChunkElements = int64_t{1} << 26;

  // Collective. Reduce-scatters the summed gradients (a parameter without .grad on a rank counts as zero there;
  // one without a gradient on any rank is skipped by step(), as torch::optim::AdamW skips it) and returns the
  // global L2 norm of the whole gradient.
  double reduce_gradients();
  // Collective. Scales this rank's gradient shard by `grad_scale` (clipping), applies one AdamW step at `lr`, and
  // all-gathers the parameters.
  void step(double lr, double grad_scale);

  int64_t numel() const { return numel_; }          // parameters in all
  int64_t shard_numel() const { return shard_; }     // parameters whose moments this rank holds
  int64_t state_bytes() const;                       // bytes of moments held by this rank
  int64_t grad_shard_bytes() const;                  // bytes of this rank's reduced gradient shard
  int64_t steps() const { return step_; }
  const ShardMoments& moments() const { return *moments_; }  // where they live, what the steps moved

  // Collective: every rank's moments gathered at rank 0 into full-length [step, then the moments as held: exp_avg,
  // exp_avg_sq (float32); or 8 bits: exp_avg codes, their absmax, exp_avg_sq codes, their absmax] (host tensors), sent
  // to it point to point; the other ranks get an empty vector (only the writer of a checkpoint holds them all).
  std::vector<at::Tensor> gather_state();
  // Takes this rank's shard of full-length state from gather_state(), saved at any world size. IoError naming `from`
  // when it does not fit, or holds the other state_bits' moments (then naming optimizer.state_bits).
  void load_state(const std::vector<at::Tensor>& full, const std::string& from);

 private:
  template <class F>
  void read_flat(int64_t a, int64_t b, F&& of, at::Tensor out) const;
  void write_flat(int64_t a, const at::Tensor& src);
  std::vector<at::Tensor> params_;
  AdamWHyper h_;
  Comm& comm_;
  std::vector<int64_t> offsets_;  // where each parameter starts in the flat order (and the total, last)
  int64_t numel_ = 0, shard_ = 0, step_ = 0, chunk_ = 1;
  at::Tensor grad_shard_;
  std::unique_ptr<ShardMoments> moments_;
  std::vector<char> used_;  // per parameter: has a gradient on some rank (what active_ was built from)
  at::Tensor active_;       // [shard_] true where the parameter is used; the others are left untouched
};

}  // namespace gspo::parallel
