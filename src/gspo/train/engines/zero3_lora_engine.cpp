// The ZeRO-3 engine for low-rank adapters (zero3_engine.h, make_zero3_lora_engine): a frozen base sharded per decoder
// layer, the adapters trained by another engine, and the whole hold that merges them into the gathered base.
#include <torch/torch.h>

#include <utility>

#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/zero3.h"
#include "gspo/train/engines/zero3_engine.h"

namespace gspo::train {
namespace {

class Zero3LoraEngine : public UpdateEngine {
 public:
  Zero3LoraEngine(model::Policy& policy, const EngineOptions& o, parallel::Comm& comm,
                  std::unique_ptr<UpdateEngine> adapters)
      : policy_(policy), lora_(*o.lora), adapters_(std::move(adapters)) {
    const auto dtype = o.dtype == config::Dtype::kBFloat16 ? torch::kBFloat16 : torch::kFloat;
    // ZeRO-3 goes first in the gate chain (a layer is gathered, then the adapters merge into it): the adapters' gate
    // leaves and comes back after it. keep_whole is refused for adapters (config): a layer kept whole between steps
    // would hold the merged weights, which a training pass would merge again.
    policy.remove_gate(&lora_);
    z_ = std::make_unique<parallel::Zero3>(policy, dtype, parallel::AdamWHyper{}, /*keep_whole=*/false, o.overlap,
                                           o.device, comm, /*frozen=*/true);
    policy.add_gate(&lora_);
  }
  void zero_grad() override { adapters_->zero_grad(); }
  void after_backward() override { adapters_->after_backward(); }
  double reduce() override { return adapters_->reduce(); }
  void step(double lr) override { adapters_->step(lr); }
  int64_t state_bytes() const override { return adapters_->state_bytes(); }
  // The adapters' engine counts the policy's parameters as they are now (unit 0 whole, the layers empty unless held)
  // and the adapters' state; the base's shards are ZeRO-3's.
  int64_t model_state_bytes() const override { return adapters_->model_state_bytes() + z_->shard_bytes(); }
  bool weights_finite() override { return adapters_->weights_finite(); }  // the base never changes
  void gather_for_save(const std::string& staging) override { adapters_->gather_for_save(staging); }
  void save(const std::string& dir) override { adapters_->save(dir); }
  void load(const std::string& dir) override { adapters_->load(dir); }
  void with_float32_policy(const std::function<void()>& f) override { adapters_->with_float32_policy(f); }

  // Collective. The base gathered whole, then W + (alpha / r) B A written over the targeted weights in place (the
  // gathered buffers are this hold's own: the next gather starts again from the shards).
  void hold_whole(bool on) override {
    if (on) {
      z_->hold_whole(true);
      if (whole_++ == 0) lora_.merge_into(policy_);
    } else if (whole_ > 0) {
      --whole_;
      z_->hold_whole(false);
    }
  }
  bool lockstep() const override { return true; }
  // An idle pass (lockstep) backpropagates 0 x its loss, which a non-finite loss would turn into NaN gradients: the
  // adapters' gradients are set aside (moved, not copied) while it runs, and what it left is dropped.
  void set_idle(bool idle) override {
    auto params = lora_.parameters();
    if (idle) {
      saved_.clear();
      for (auto& p : params) saved_.push_back(std::exchange(p.mutable_grad(), at::Tensor()));
    } else if (saved_.size() == params.size()) {
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = std::move(saved_[i]);
      saved_.clear();
    }
  }
  model::GateStats take_gather_counts() override { return z_->take_gather_stats(); }

 private:
  model::Policy& policy_;
  model::LoraAdapters& lora_;
  std::unique_ptr<UpdateEngine> adapters_;
  std::unique_ptr<parallel::Zero3> z_;
  int64_t whole_ = 0;
  std::vector<at::Tensor> saved_;
};

}  // namespace

std::unique_ptr<UpdateEngine> make_zero3_lora_engine(model::Policy& policy, const EngineOptions& opts,
                                                     parallel::Comm& comm, std::unique_ptr<UpdateEngine> adapters) {
  return std::make_unique<Zero3LoraEngine>(policy, opts, comm, std::move(adapters));
}

}  // namespace gspo::train
