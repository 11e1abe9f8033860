#include "gspo/train/step_experts.h"

#include <torch/torch.h>

#include <string>
#include <vector>

#include "gspo/model/policy.h"
#include "gspo/parallel/expert_layer.h"
#include "gspo/train/engines/update_engine.h"
#include "gspo/train/metrics/moe_load.h"

namespace gspo::train {
namespace {

int64_t experts_of(model::Policy& policy, int64_t layer) {
  return policy.parameter("layers." + std::to_string(layer) + ".mlp.gate.weight").size(0);
}

class OwnExperts final : public StepExperts {
 public:
  at::Tensor run(model::Policy& policy, int64_t index, const at::Tensor& x, const model::LayerContext& ctx,
                 bool checkpoint, const at::Tensor& replay, at::Tensor* chosen) override {
    return own_layers().run(policy, index, x, ctx, checkpoint, replay, chosen);
  }
  bool needs_layers() const override { return false; }
  bool runs_shared(const model::Policy& policy) const override { return own_layers().runs_shared(policy); }
  void step_begins() override {}
  void rollout_done(UpdateEngine&, StepMetrics&) override {}
  void record_load(model::Policy& policy, StepMetrics& m) override { record_moe_load(policy.expert_load(), m); }
  void add_comm(parallel::Comm::Counters&) override {}
};

class SharedExperts final : public StepExperts {
 public:
  explicit SharedExperts(parallel::Comm& group) : group_(group) {}

  at::Tensor run(model::Policy& policy, int64_t index, const at::Tensor& x, const model::LayerContext& ctx,
                 bool checkpoint, const at::Tensor& replay, at::Tensor* chosen) override {
    const bool training = at::GradMode::is_enabled();
    at::Tensor got;
    const bool want = chosen || (training && !replay.defined());
    auto out = parallel::expert_parallel_layer(policy, index, x, ctx, group_, replay, checkpoint, want ? &got : nullptr);
    if (chosen) *chosen = got;
    if (training) {  // the counts of the last forward with gradients (its backward's recomputation does not come here)
      trained_ = true;
      if (static_cast<int64_t>(counts_.size()) <= index) counts_.resize(index + 1);
      const auto& used = replay.defined() ? replay : got;
      counts_[index] = used.numel() > 0 ? torch::bincount(used.reshape({-1}).to(torch::kLong), {},
                                                          experts_in(policy, index))
                                        : at::Tensor();
    }
    return out;
  }
  bool needs_layers() const override { return true; }

  void step_begins() override {
    group_.take_counters();
    trained_ = false;
    counts_.clear();
  }

  void rollout_done(UpdateEngine& engine, StepMetrics& m) override {
    const auto passes = engine.take_rollout_passes();
    m.ep_rollout_passes = static_cast<double>(passes.own);
    const int64_t all = passes.own + passes.served;
    m.ep_rollout_idle_frac = all > 0 ? static_cast<double>(passes.served) / static_cast<double>(all) : 0.0;
  }

  // Each MoE layer's per-expert counts summed over the group (a layer this rank counted nothing for adds zeros).
  void record_load(model::Policy& policy, StepMetrics& m) override {
    if (!trained_) return;  // no update this step (the group's ranks agree: their updates run in lockstep)
    std::vector<at::Tensor> counts;
    std::vector<int64_t> experts;
    for (int64_t layer : policy.moe_layers()) {
      experts.push_back(experts_in(policy, layer));
      const bool have = layer < static_cast<int64_t>(counts_.size()) && counts_[layer].defined();
      counts.push_back(have ? counts_[layer].to(torch::kDouble).cpu() : torch::zeros({experts.back()}, torch::kDouble));
    }
    auto all = torch::cat(counts);
    group_.all_reduce(all);
    std::vector<at::Tensor> per_layer;
    int64_t at = 0;
    for (int64_t n : experts) {
      per_layer.push_back(all.narrow(0, at, n));
      at += n;
    }
    record_moe_load(per_layer, m);
  }

  void add_comm(parallel::Comm::Counters& c) override {
    const auto group = group_.take_counters();
    c.seconds += group.seconds;
    c.bytes += group.bytes;
    c.calls += group.calls;
  }

 private:
  // MoE layer `layer`'s expert count, read from its router's shape once (the training forward asks every micro-batch).
  int64_t experts_in(model::Policy& policy, int64_t layer) {
    if (static_cast<int64_t>(experts_.size()) <= layer) experts_.resize(layer + 1, 0);
    if (experts_[layer] == 0) experts_[layer] = experts_of(policy, layer);
    return experts_[layer];
  }

  parallel::Comm& group_;
  std::vector<int64_t> experts_;  // per decoder layer: its expert count once read (0 = not yet)
  bool trained_ = false;           // a forward with gradients ran this step
  std::vector<at::Tensor> counts_;  // per decoder layer: int64 [experts] on the device, undefined for dense layers
};

}  // namespace

std::unique_ptr<StepExperts> make_step_experts(parallel::Comm* group) {
  if (group) return std::make_unique<SharedExperts>(*group);
  return std::make_unique<OwnExperts>();
}

}  // namespace gspo::train
