// The two update engines: torch's AdamW over replicated state, and ZeRO-1's sharded AdamW. Both share the precision
// handling (Weights: the policy's own float32 parameters, or float32 masters of a bf16 policy).
#include "gspo/train/engines/update_engine.h"

#include <torch/torch.h>

#include <cmath>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/grad_sync.h"
#include "gspo/parallel/sharded_adamw.h"
#include "gspo/train/engines/adamw_optimizer.h"
#include "gspo/train/engines/fused_step.h"
#include "gspo/train/engines/optimizer_files.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/train/engines/grad_clip.h"
#include "gspo/train/engines/engine_weights.h"

namespace gspo::train {
namespace {


// A checkpoint whose optimizer files are the other engine's.
}  // namespace

[[noreturn]] void wrong_engine(const std::string& dir, int64_t written) {
  throw ConfigError("checkpoint '" + dir + "' was written with distributed.zero_stage " + std::to_string(written) +
                    "; resume it with zero_stage " + std::to_string(written) +
                    (written == 0 ? " (the sharded optimizers cannot take torch AdamW state)" : " (any world size)"));
}

[[noreturn]] void missing_state(const std::string& dir, const std::string& file) {
  if (written_by_zero3(dir)) wrong_engine(dir, 3);
  if (core::exists(dir + "/" + kZero1File)) wrong_engine(dir, 1);
  if (core::exists(dir + "/optimizer.pt") || core::exists(dir + "/" + kAdamW8bitFile)) wrong_engine(dir, 0);
  throw IoError("checkpoint '" + dir + "' lacks " + file + " (this run's optimizer state) and holds no other "
                "engine's optimizer file: it is incomplete; resume from an earlier checkpoint");
}

namespace {

// Replicated AdamW: gradients all-reduced bucket by bucket, clip_grad_norm_'s clip and the step of optimizer.state_bits'
// optimizer (adamw_optimizer.h: torch::optim::AdamW's through torch's multi-tensor kernels, train/engines/fused_step.h,
// or bitsandbytes' 8-bit AdamW).
class AdamWEngine : public UpdateEngine {
 public:
  AdamWEngine(model::Policy& policy, const EngineOptions& o, parallel::Comm& comm)
      : w_(policy, o.dtype, o.lora), comm_(comm), max_norm_(max_grad_norm(o.optimizer)), bucket_bytes_(o.bucket_bytes),
        opt_(make_adamw_optimizer(w_.params(), o.optimizer)) {}
  void zero_grad() override { w_.zero_grad(); }
  void after_backward() override { w_.after_backward(); }
  double reduce() override {
    auto params = w_.params();
    parallel::all_reduce_gradients(comm_, params, bucket_bytes_);
    return clip_grad_norm_fused(params, max_norm_);
  }
  void step(double lr) override {
    opt_->step(lr);
    w_.publish();
  }
  int64_t state_bytes() const override { return opt_->state_bytes(); }
  int64_t model_state_bytes() const override { return w_.bytes() + state_bytes(); }
  bool weights_finite() override { return w_.finite(); }  // replicated: the same answer on every rank
  void save(const std::string& dir) override { opt_->save(dir); }
  void load(const std::string& dir) override {
    if (core::exists(dir + "/" + kZero1File)) wrong_engine(dir, 1);
    if (written_by_zero3(dir)) wrong_engine(dir, 3);
    opt_->load(dir);
  }
  void with_float32_policy(const std::function<void()>& f) override { w_.with_float32_policy(f); }

 private:
  Weights w_;
  parallel::Comm& comm_;
  double max_norm_, bucket_bytes_;
  std::unique_ptr<AdamWOptimizer> opt_;
};

// ZeRO-1: gradients reduce-scattered, each rank steps its shard of the moments, weights all-gathered.
class Zero1Engine : public UpdateEngine {
 public:
  Zero1Engine(model::Policy& policy, const EngineOptions& o, parallel::Comm& comm)
      : w_(policy, o.dtype, o.lora), max_norm_(max_grad_norm(o.optimizer)) {
    const auto& h = o.optimizer;
    const parallel::AdamWHyper hyper{h.beta1, h.beta2, h.eps, h.weight_decay, h.state_bits, o.offload};
    zero_ = std::make_unique<parallel::ShardedAdamW>(w_.params(), hyper, comm);
  }
  void zero_grad() override { w_.zero_grad(); }
  void after_backward() override { w_.after_backward(); }
  double reduce() override { return norm_ = zero_->reduce_gradients(); }
  void step(double lr) override {
    zero_->step(lr, clip_scale(norm_, max_norm_));
    w_.publish();
  }
  int64_t state_bytes() const override { return zero_->state_bytes(); }
  int64_t model_state_bytes() const override {
    return w_.bytes() + zero_->state_bytes() + zero_->grad_shard_bytes();
  }
  bool weights_finite() override { return w_.finite(); }
  void gather_for_save(const std::string&) override { gathered_ = zero_->gather_state(); }
  void save(const std::string& dir) override {
    io::save_tensors(dir + "/" + kZero1File, gathered_, "ZeRO-1 optimizer state");
  }
  void load(const std::string& dir) override {
    const std::string file = dir + "/" + kZero1File;
    if (!core::exists(file)) missing_state(dir, kZero1File);
    if (core::exists(dir + "/optimizer_experts_0.pt"))
      throw ConfigError("checkpoint '" + dir + "' was written with distributed.expert_parallel (its experts' moments "
                        "are in one file per rank of a group): resume it with distributed.expert_parallel > 1, any E "
                        "that divides the ranks and the experts");
    zero_->load_state(io::load_tensors(file, "ZeRO-1 optimizer state"), file);
  }
  void with_float32_policy(const std::function<void()>& f) override { w_.with_float32_policy(f); }

 private:
  Weights w_;
  double max_norm_;
  double norm_ = 0;
  std::unique_ptr<parallel::ShardedAdamW> zero_;
  std::vector<at::Tensor> gathered_;
};

}  // namespace

std::unique_ptr<UpdateEngine> make_replicated_engine(model::Policy& policy, const EngineOptions& opts,
                                                     parallel::Comm& comm) {
  return std::make_unique<AdamWEngine>(policy, opts, comm);
}

std::unique_ptr<UpdateEngine> make_zero1_engine(model::Policy& policy, const EngineOptions& opts, parallel::Comm& comm) {
  return std::make_unique<Zero1Engine>(policy, opts, comm);
}

}  // namespace gspo::train
