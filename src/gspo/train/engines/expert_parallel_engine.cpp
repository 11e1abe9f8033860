// The update engine of expert parallelism (zero3_engine.h: make_expert_parallel_engine).
#include <torch/torch.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/io/checkpoint.h"
#include "gspo/io/tensor_checks.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/expert_rollout.h"
#include "gspo/parallel/expert_shards.h"
#include "gspo/parallel/sharded_adamw.h"
#include "gspo/train/engines/engine_weights.h"
#include "gspo/train/engines/grad_clip.h"
#include "gspo/train/engines/optimizer_files.h"
#include "gspo/train/engines/zero3_engine.h"

namespace gspo::train {
namespace {


class ExpertParallelEngine : public UpdateEngine {
 public:
  ExpertParallelEngine(model::Policy& policy, const EngineOptions& o, parallel::Comm& world)
      : w_(policy, o.dtype, nullptr), policy_(policy), shards_(*o.experts), world_(world),
        max_norm_(max_grad_norm(o.optimizer)) {
    const auto model = policy.parameters();
    const auto params = w_.params();  // the policy's, or float32 masters in the same order
    std::vector<at::Tensor> dense, kept(shards_.local().size());
    kept_model_.resize(kept.size());
    for (size_t i = 0; i < model.size(); ++i) {
      const auto* at = shards_.place(model[i]);
      places_.push_back(at);
      if (!at) {
        dense.push_back(params[i]);
      } else if (at->kept) {
        kept[at->index] = params[i];
        kept_model_[at->index] = model[i];
      }
    }
    kept_ = kept;
    per_ = shards_.per_rank(policy.moe_layers().front());  // (every MoE layer of a model has as many experts)
    int64_t offset = 0;  // where each kept parameter starts in a rank's flat expert state (the same on every rank)
    for (const auto& p : kept) {
      kept_offset_.push_back(offset);
      offset += p.numel();
    }
    const auto& h = o.optimizer;
    const parallel::AdamWHyper hyper{h.beta1, h.beta2, h.eps, h.weight_decay, h.state_bits, o.offload};
    bits_ = h.state_bits;
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
  RolloutPasses take_rollout_passes() override { return std::exchange(passes_, {}); }
  // Sampling scopes: the policy samples with its slot methods one layer at a time, each MoE layer's experts run by
  // the group (parallel/expert_rollout.h); no rank gathers the experts it does not keep.
  void hold_whole(bool on) override {
    policy_.set_expert_runner(nullptr);
    if (rollout_) {
      passes_.own += rollout_->stats().passes;
      passes_.served += rollout_->stats().idle_passes;
    }
    rollout_.reset();
    if (!on) return;
    rollout_ = std::make_unique<parallel::RolloutExperts>(policy_, shards_.group());
    policy_.set_expert_runner(rollout_.get());
  }

  // Collective. The non-expert moments gathered (rank 0 writes them, ZeRO-1's file over those parameters); each rank
  // of the first group writes its experts' moments (gathered over its replicas) into `staging`; group 0 sends rank 0
  // the float32 experts it lacks for the consolidated policy.pt.
  void gather_for_save(const std::string& staging) override {
    dense_state_ = dense_->gather_state();
    auto kept = experts_->gather_state();
    auto& group = shards_.group();
    if (world_.rank() < group.world_size()) {  // the first group: one copy of every expert
      core::ensure_dir(staging);
      std::vector<at::Tensor> file;
      if (bits_ == 8) {  // the kept experts' flat codes and absmax as held: blocks straddle experts (same E to resume)
        file = kept;
        file.insert(file.begin(), torch::tensor({group.world_size(), per_, bits_}, torch::kLong));
      } else {
        file = {torch::tensor({group.world_size(), per_}, torch::kLong), kept[0]};
        for (size_t i = 0; i < kept_.size(); ++i) {
          file.push_back(kept[1].narrow(0, kept_offset_[i], kept_[i].numel()).view_as(kept_[i]));
          file.push_back(kept[2].narrow(0, kept_offset_[i], kept_[i].numel()).view_as(kept_[i]));
        }
      }
      io::save_tensors(staging + "/" + expert_file(group.rank()), file, "expert optimizer state");
      remote_ = shards_.gather_remote_at_root(kept_);  // masters or the float32 policy: float32 either way
    }
    staging_ = staging;
    files_ = group.world_size();
    world_.barrier("expert shards of a checkpoint written");
  }
  void save(const std::string& dir) override {
    io::save_tensors(dir + "/" + kZero1File, dense_state_, "ZeRO-1 optimizer state (outside the experts)");
    dense_state_.clear();
    for (int64_t g = 0; g < files_; ++g) {
      const std::string from = staging_ + "/" + expert_file(g), to = dir + "/" + expert_file(g);
      if (std::rename(from.c_str(), to.c_str()) != 0)
        throw IoError("cannot move the expert shard '" + from + "' into checkpoint '" + dir + "'");
    }
    core::remove_all(staging_);
  }
  // Any world size and expert-parallel size: this rank's experts from the files that hold them, or (a checkpoint of
  // the ZeRO-1 engine, no expert files) its shares of ZeRO-1's full-length state.
  void load(const std::string& dir) override {
    const std::string file = dir + "/" + kZero1File;
    if (!core::exists(file)) missing_state(dir, kZero1File);
    if (!core::exists(dir + "/" + expert_file(0))) return load_full(dir, io::load_tensors(file, "ZeRO-1 optimizer state"));
    const auto dense = io::load_tensors(file, "ZeRO-1 optimizer state (outside the experts)");
    dense_->load_state(dense, file);
    if (bits_ == 8) return load_8bit(dir);
    std::map<int64_t, std::vector<at::Tensor>> files;  // by the writing rank's place in its group
    files[0] = read_expert_file(dir, 0);
    if (files[0][0].numel() != 2)
      io::wrong_state_bits("checkpoint '" + dir + "'", "the experts' ", 8);
    const int64_t old_per = files[0][0][1].item<int64_t>();
    std::vector<at::Tensor> km, kv;
    for (size_t i = 0; i < kept_.size(); ++i) {
      const auto* at = shards_.place(kept_model_[i]);
      const int64_t block = at->owner_index / per_, expert = shards_.group().rank() * per_ + at->owner_index % per_;
      const int64_t owner = expert / old_per, index = block * old_per + expert % old_per;
      auto it = files.find(owner);
      if (it == files.end()) it = files.emplace(owner, read_expert_file(dir, owner)).first;
      const auto& f = it->second;
      if (static_cast<int64_t>(f.size()) < 4 + 2 * index || !f[2 + 2 * index].sizes().equals(kept_[i].sizes()))
        throw IoError("'" + dir + "/" + expert_file(owner) + "' does not hold the moments of expert " +
                      std::to_string(expert) + " of this model");
      km.push_back(f[2 + 2 * index].reshape({-1}));
      kv.push_back(f[3 + 2 * index].reshape({-1}));
    }
    experts_->load_state({dense[0], torch::cat(km), torch::cat(kv)}, dir + "/" + expert_file(0));
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
  static std::vector<at::Tensor> read_expert_file(const std::string& dir, int64_t g) {
    const std::string path = dir + "/" + expert_file(g);
    if (!core::exists(path))
      throw IoError("checkpoint '" + dir + "' lacks " + expert_file(g) + " (written with expert parallelism: one file "
                    "per rank of the first group)");
    auto f = io::load_tensors(path, "expert optimizer state");
    if (f.size() < 2 || (f[0].numel() != 2 && f[0].numel() != 3)) throw IoError("'" + path + "' is not an expert optimizer state file");
    const bool eight = f[0].numel() == 3;  // [header, step, then the moments: 8 bits' 4, or float32 pairs an expert]
    for (size_t j = 1; j < f.size(); ++j)
      io::require_finite(f[j], path, j == 1 ? std::string("the step count") : "tensor " + std::to_string(j) + " (" +
                         (eight ? io::moment_name(j - 2, 4) : io::moment_name((j - 2) % 2, 2)) + ")");
    return f;
  }
  // 8-bit moments: this rank's experts' flat codes and absmax, written by the rank of the same place in its group of
  // the same distributed.expert_parallel (any number of replicas: the flat state re-cuts on block boundaries).
  void load_8bit(const std::string& dir) {
    const auto f = read_expert_file(dir, shards_.group().rank());
    const std::string path = dir + "/" + expert_file(shards_.group().rank());
    if (f[0].numel() != 3)
      io::wrong_state_bits("checkpoint '" + dir + "'", "the experts' ", 32);
    if (f[0][0].item<int64_t>() != shards_.group().world_size())
      throw ConfigError("checkpoint '" + dir + "' holds 8-bit expert moments written with distributed.expert_parallel " +
                        std::to_string(f[0][0].item<int64_t>()) + ": resume it with the same expert_parallel (an "
                        "8-bit block spans neighbouring experts, so the experts cannot be dealt out anew)");
    experts_->load_state(std::vector<at::Tensor>(f.begin() + 1, f.end()), path);
  }
  // A ZeRO-1 checkpoint written without expert parallelism: every parameter's moments in the policy's order.
  void load_full(const std::string& dir, const std::vector<at::Tensor>& full) {
    const std::string file = dir + "/" + kZero1File;
    if (bits_ == 8)
      throw ConfigError("checkpoint '" + dir + "' holds ZeRO-1 moments without expert parallelism; with "
                        "optimizer.state_bits 8 they resume under distributed.expert_parallel 1 only (an 8-bit block "
                        "spans neighbouring parameters, which expert parallelism deals out to other ranks)");
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

  Weights w_;
  model::Policy& policy_;
  parallel::ExpertShards& shards_;
  parallel::Comm& world_;
  double max_norm_, norm_ = 0;
  std::vector<const parallel::ExpertShards::Place*> places_;  // per policy parameter; null: not an expert's
  std::vector<at::Tensor> kept_;        // what the optimizer updates of the kept experts (local() order)
  std::vector<at::Tensor> kept_model_;  // the policy's parameters they belong to
  std::vector<int64_t> kept_offset_;
  int64_t per_ = 1;                     // experts of a layer this rank keeps
  int64_t bits_ = 32;                   // optimizer.state_bits (the checkpoint's layout of the experts' moments)
  std::unique_ptr<parallel::ShardedAdamW> dense_, experts_;
  std::unique_ptr<parallel::RolloutExperts> rollout_;  // the policy's expert runner while a sampling scope holds
  RolloutPasses passes_;                                // of the scopes since take_rollout_passes()
  std::vector<at::Tensor> dense_state_, remote_;
  std::string staging_;
  int64_t files_ = 0;
};

}  // namespace

std::unique_ptr<UpdateEngine> make_expert_parallel_engine(model::Policy& policy, const EngineOptions& opts,
                                                          parallel::Comm& comm) {
  if (!opts.experts || !opts.expert_replicas || opts.zero_stage != 1 || opts.lora)
    throw std::invalid_argument("make_expert_parallel_engine: needs the shards and replicas, zero_stage 1, no adapters");
  return std::make_unique<ExpertParallelEngine>(policy, opts, comm);
}

}  // namespace gspo::train
