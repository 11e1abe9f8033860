#include "gspo/parallel/expert_shards.h"

#include <torch/torch.h>

#include <functional>
#include <stdexcept>

#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"

namespace gspo::parallel {
namespace {

constexpr const char* kKinds[] = {"gate_proj", "up_proj", "down_proj"};

std::string expert_name(int64_t layer, int64_t expert, const char* kind) {
  return "layers." + std::to_string(layer) + ".mlp.experts." + std::to_string(expert) + "." + kind + ".weight";
}

}  // namespace

ExpertGroups open_expert_groups(Comm& world, int64_t E) {
  const int64_t W = world.world_size(), r = world.rank();
  if (E < 1 || W % E != 0)
    throw std::invalid_argument("expert parallelism over " + std::to_string(E) + " ranks does not divide a world of " +
                                std::to_string(W));
  std::vector<int64_t> group, replicas;
  for (int64_t q = (r / E) * E; q < (r / E + 1) * E; ++q) group.push_back(q);
  for (int64_t q = r % E; q < W; q += E) replicas.push_back(q);
  ExpertGroups g;  // every rank opens its group first, then its replicas: no two ranks wait on each other in turn
  g.group = std::make_unique<Comm>(world, group, "experts-" + std::to_string(group.front()));
  g.replicas = std::make_unique<Comm>(world, replicas, "expert-replicas-" + std::to_string(replicas.front()));
  return g;
}

ExpertShards::ExpertShards(model::Policy& policy, Comm& group) : policy_(policy), group_(group) {
  if (!policy.has_expert_parallel())
    throw std::invalid_argument("'" + policy.path() + "' has no expert-parallel methods (ep_api)");
  const int64_t E = group.world_size(), g = group.rank();
  per_rank_.assign(policy.num_layers(), 0);
  torch::NoGradGuard no_grad;
  int64_t block = 0;
  for (int64_t layer : policy.moe_layers()) {
    const int64_t n = policy.parameter("layers." + std::to_string(layer) + ".mlp.gate.weight").size(0);
    if (n % E != 0)
      throw std::invalid_argument("layer " + std::to_string(layer) + "'s " + std::to_string(n) +
                                  " experts do not split over " + std::to_string(E) + " ranks");
    const int64_t per = n / E;
    per_rank_[layer] = per;
    for (const char* kind : kKinds) {
      for (int64_t e = 0; e < n; ++e) {
        auto p = policy.parameter(expert_name(layer, e, kind));
        // owner_index: the place of (layer, kind, e mod per) in any rank's local(), blocks of `per` in order
        Place at{e / per == g, 0, e / per, block + e % per};
        if (at.kept) {
          at.index = static_cast<int64_t>(local_.size());
          local_.push_back(p);
        } else {
          at.index = static_cast<int64_t>(remote_.size());
          remote_.push_back(p);
          remote_shape_.push_back(p.sizes().vec());
        }
        places_[p.unsafeGetTensorImpl()] = at;
      }
      block += per;
    }
  }
  free_remote();
  policy.add_gate(this);
}

ExpertShards::~ExpertShards() { policy_.remove_gate(this); }

int64_t ExpertShards::per_rank(int64_t layer) const { return per_rank_.at(layer); }

const ExpertShards::Place* ExpertShards::place(const at::Tensor& param) const {
  const auto it = places_.find(param.unsafeGetTensorImpl());
  return it == places_.end() ? nullptr : &it->second;
}

int64_t ExpertShards::full_numel(const at::Tensor& param) const {
  const auto* at = place(param);
  if (!at || at->kept) return param.numel();
  return c10::multiply_integers(remote_shape_[at->index]);
}

void ExpertShards::for_each_block(const std::vector<at::Tensor>& local_values, const char* caller,
                                  const std::function<void(const std::vector<at::Tensor>&)>& f) const {
  if (local_values.size() != local_.size())
    throw std::invalid_argument(std::string("ExpertShards::") + caller + ": " + std::to_string(local_values.size()) +
                                " values for " + std::to_string(local_.size()) + " kept expert parameters");
  size_t lo = 0;
  for (const int64_t per : per_rank_)
    for (int k = 0; per > 0 && k < 3; ++k, lo += per)
      f(std::vector<at::Tensor>(local_values.begin() + lo, local_values.begin() + lo + per));
}

std::vector<at::Tensor> ExpertShards::gather_remote(const std::vector<at::Tensor>& local_values) const {
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> out;
  out.reserve(remote_.size());
  const int64_t E = group_.world_size(), g = group_.rank();
  for_each_block(local_values, "gather_remote", [&](const std::vector<at::Tensor>& mine) {
    const auto per = static_cast<int64_t>(mine.size());
    auto full = group_.all_gather(torch::stack(mine).reshape({-1})).view({E * per, -1});
    for (int64_t e = 0; e < E * per; ++e)
      if (e / per != g) out.push_back(full[e].view(mine.front().sizes()));
  });
  return out;
}

std::vector<at::Tensor> ExpertShards::gather_remote_at_root(const std::vector<at::Tensor>& local_values) const {
  constexpr int kTag = 37;
  torch::NoGradGuard no_grad;
  std::vector<at::Tensor> out;
  const int64_t E = group_.world_size(), g = group_.rank();
  for_each_block(local_values, "gather_remote_at_root", [&](const std::vector<at::Tensor>& mine) {
    const auto per = static_cast<int64_t>(mine.size());
    if (g != 0) {
      group_.send(torch::stack(mine).reshape({-1}).contiguous(), 0, kTag, "experts for a checkpoint");
      return;
    }
    for (int64_t q = 1; q < E; ++q) {
      auto block = torch::empty({per * mine.front().numel()}, mine.front().options());
      group_.recv(block, q, kTag, "experts for a checkpoint");
      for (int64_t j = 0; j < per; ++j) out.push_back(block.view({per, -1})[j].view(mine.front().sizes()));
    }
  });
  return out;
}

void ExpertShards::set_remote(const std::vector<at::Tensor>& values) {
  if (values.size() != remote_.size())
    throw std::invalid_argument("ExpertShards::set_remote: " + std::to_string(values.size()) + " values for " +
                                std::to_string(remote_.size()) + " freed expert parameters");
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < remote_.size(); ++i) remote_[i].set_data(values[i].to(remote_[i].options()));
  whole_ = true;
}

void ExpertShards::free_remote() {
  torch::NoGradGuard no_grad;
  for (auto& p : remote_) p.set_data(at::empty({0}, p.options()));
  whole_ = false;
}

void ExpertShards::hold_whole(bool on) {
  if (!on) return free_remote();
  set_remote(gather_remote(local_));
}

}  // namespace gspo::parallel
