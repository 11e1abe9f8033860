// The update engine of expert parallelism (zero3_engine.h: make_expert_parallel_engine).
#include <torch/torch.h>

#include <cmath>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/expert_shards.h"
#include "gspo/parallel/sharded_adamw.h"
#include "gspo/train/engine_weights.h"
#include "gspo/train/grad_clip.h"
#include "gspo/train/zero3_engine.h"

namespace gspo::train {
namespace {

constexpr const char* kZero1File = "optimizer_zero1.pt";  // the ZeRO-1 engine's file, in its layout

class ExpertParallelEngine : public UpdateEngine {
 public:
  ExpertParallelEngine(model::Policy& policy, const EngineOptions& o, parallel::Comm& world)
      : w_(policy, o.dtype, nullptr), policy_(policy), shards_(*o.experts), world_(world),
        max_norm_(max_grad_norm(o.optimizer)) {
    const auto model = policy.parameters();
    const auto params = w_.params();  // the policy's, or float32 masters in the same order
    std::vector<at::Tensor> dense, kept(shards_.local().size());
    for (size_t i = 0; i < model.size(); ++i) {
      const auto* at = shards_.place(model[i]);
      places_.push_back(at);
      if (!at) dense.push_back(params[i]);
      else if (at->kept) kept[at->index] = params[i];
    }
    kept_ = kept;
    int64_t offset = 0;  // where each kept parameter starts in a rank's flat expert state (the same on every rank)
    for (const auto& p : kept) {
      kept_offset_.push_back(offset);
      offset += p.numel();
    }
    const auto& h = o.optimizer;
    const parallel::AdamWHyper hyper{h.beta1, h.beta2, h.eps, h.weight_decay};
    dense_ = std::make_unique<parallel::ShardedAdamW>(dense, hyper, world);
    experts_ = std::make_unique<parallel::ShardedAdamW>(kept, hyper, *o.expert_replicas);
  }

  void zero_grad() override { w_.zero_grad(); }
  void after_backward() override { w_.after_backward(); }
  double reduce() override {
    const double dense = dense_->reduce_gradients();  // summed over the world: the same on every rank
    const double kept = experts_->reduce_gradients();  // over the replicas: this rank's experts' whole gradient
    auto sq = torch::tensor({kept * kept}, torch::kDouble);
    shards_.group().all_reduce(sq);  // every expert of the layer once
    return norm_ = std::sqrt(dense * dense + sq.item<double>());
  }
  void step(double lr) override {
    const double scale = clip_scale(norm_, max_norm_);
    dense_->step(lr, scale);
    experts_->step(lr, scale);
    w_.publish();
  }
  int64_t state_bytes() const override { return dense_->state_bytes() + experts_->state_bytes(); }
  int64_t model_state_bytes() const override {
    return w_.bytes() + state_bytes() + dense_->grad_shard_bytes() + experts_->grad_shard_bytes();
  }
  bool weights_finite() override { return !world_.any(!w_.finite()); }  // each rank holds other experts

  // An idle pass (lockstep) backpropagates 0 x its own loss, which adds nothing here; the gradients it brings this
  // rank's experts are the other ranks' tokens' and must be kept (ZeRO-3's engine discards an idle pass's gradients).
  void set_idle(bool) override {}
  bool lockstep() const override { return true; }  // every pass exchanges tokens within the group
  void hold_whole(bool on) override { shards_.hold_whole(on); }

  // Collective: the moments of every parameter in the policy's order (rank 0), and the float32 experts this rank does
  // not keep (rank 0, for the consolidated policy.pt).
  void gather_for_save(const std::string&) override {
    auto dense = dense_->gather_state();
    auto kept = experts_->gather_state();
    auto& group = shards_.group();
    const auto m = group.all_gather(kept[1]), v = group.all_gather(kept[2]);
    auto remote = shards_.gather_remote(kept_);  // masters (bf16 training) or the float32 policy: float32 either way
    if (!world_.is_main()) return;
    const auto model = policy_.parameters();
    const int64_t per_rank = kept[1].numel();
    std::vector<at::Tensor> ms, vs;
    int64_t d = 0;
    for (size_t i = 0; i < model.size(); ++i) {
      const auto* at = places_[i];
      if (!at) {
        const int64_t n = model[i].numel();
        ms.push_back(dense[1].narrow(0, d, n));
        vs.push_back(dense[2].narrow(0, d, n));
        d += n;
        continue;
      }
      const int64_t from = at->owner * per_rank + kept_offset_[at->owner_index];
      const int64_t n = shards_.full_numel(model[i]);
      ms.push_back(m.narrow(0, from, n));
      vs.push_back(v.narrow(0, from, n));
    }
    saved_ = {dense[0], torch::cat(ms), torch::cat(vs)};
    remote_ = std::move(remote);
  }
  void save(const std::string& dir) override {
    io::save_tensors(dir + "/" + kZero1File, saved_, "ZeRO-1 optimizer state");
    saved_.clear();
  }
  // Any world size and expert-parallel size: this rank's shares of ZeRO-1's full-length state.
  void load(const std::string& dir) override {
    const std::string file = dir + "/" + kZero1File;
    if (!core::exists(file)) wrong_engine(dir, written_by_zero3(dir) ? 3 : 0);
    const auto full = io::load_tensors(file, "ZeRO-1 optimizer state");
    const auto model = policy_.parameters();
    int64_t total = 0;
    for (const auto& p : model) total += shards_.full_numel(p);
    if (full.size() != 3 || full[1].numel() != total || full[2].numel() != total)
      throw IoError("'" + file + "' does not hold ZeRO-1 optimizer state for this model (" + std::to_string(total) +
                    " parameters)");
    std::vector<at::Tensor> dm, dv, km(kept_.size()), kv(kept_.size());
    int64_t offset = 0;
    for (size_t i = 0; i < model.size(); ++i) {
      const int64_t n = shards_.full_numel(model[i]);
      const auto* at = places_[i];
      if (!at) {
        dm.push_back(full[1].narrow(0, offset, n));
        dv.push_back(full[2].narrow(0, offset, n));
      } else if (at->kept) {
        km[at->index] = full[1].narrow(0, offset, n);
        kv[at->index] = full[2].narrow(0, offset, n);
      }
      offset += n;
    }
    dense_->load_state({full[0], torch::cat(dm), torch::cat(dv)}, file);
    experts_->load_state({full[0], torch::cat(km), torch::cat(kv)}, file);
  }
  // Rank 0, after gather_for_save: the policy in float32 with every expert (the consolidated policy.pt).
  void with_float32_policy(const std::function<void()>& f) override {
    if (remote_.size() != shards_.remote().size())
      throw Error("expert parallelism: the experts of other ranks were not gathered before saving the policy");
    w_.with_float32_policy([&] {
      shards_.set_remote(remote_);
      try {
        f();
      } catch (...) {
        shards_.free_remote();
        throw;
      }
      shards_.free_remote();
    });
    remote_.clear();
  }

 private:
  Weights w_;
  model::Policy& policy_;
  parallel::ExpertShards& shards_;
  parallel::Comm& world_;
  double max_norm_, norm_ = 0;
  std::vector<const parallel::ExpertShards::Place*> places_;  // per policy parameter; null: not an expert's
  std::vector<at::Tensor> kept_;                               // what the optimizer updates of the kept experts
  std::vector<int64_t> kept_offset_;
  std::unique_ptr<parallel::ShardedAdamW> dense_, experts_;
  std::vector<at::Tensor> saved_, remote_;
};

}  // namespace

std::unique_ptr<UpdateEngine> make_expert_parallel_engine(model::Policy& policy, const EngineOptions& opts,
                                                          parallel::Comm& comm) {
  if (!opts.experts || !opts.expert_replicas || opts.zero_stage != 1 || opts.lora)
    throw std::invalid_argument("make_expert_parallel_engine: needs the shards and replicas, zero_stage 1, no adapters");
  return std::make_unique<ExpertParallelEngine>(policy, opts, comm);
}

}  // namespace gspo::train
