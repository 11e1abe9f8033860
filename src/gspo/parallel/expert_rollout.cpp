#include "gspo/parallel/expert_rollout.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gspo/core/log.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"

namespace gspo::parallel {

RolloutExperts::RolloutExperts(model::Policy& policy, Comm& group, int64_t chunk_rows)
    : group_(group), dtype_(c10::kFloat), device_(policy.device()) {
  const int64_t W = group.world_size();
  chunk_ = chunk_rows > 0 ? chunk_rows : std::max<int64_t>(64, kDefaultGatherRows / W);
  for (int64_t index : policy.moe_layers()) {
    Layer l;
    l.index = index;
    std::tie(l.top_k, l.norm_topk) = policy.moe_routing(index);
    const std::string prefix = "layers." + std::to_string(index) + ".mlp.";
    l.router = policy.parameter(prefix + "gate.weight");
    const int64_t n = l.router.size(0);
    if (n % W != 0)
      throw std::invalid_argument("layer " + std::to_string(index) + "'s " + std::to_string(n) +
                                  " experts do not split over " + std::to_string(W) + " ranks");
    per_ = n / W;
    first_ = group.rank() * per_;
    hidden_ = l.router.size(1);
    for (int64_t e = first_; e < first_ + per_; ++e) {
      const std::string ex = prefix + "experts." + std::to_string(e) + ".";
      l.gate.push_back(policy.parameter(ex + "gate_proj.weight"));
      l.up.push_back(policy.parameter(ex + "up_proj.weight"));
      l.down.push_back(policy.parameter(ex + "down_proj.weight"));
    }
    dtype_ = l.gate.front().scalar_type();
    layers_.push_back(std::move(l));
  }
}

RolloutExperts::~RolloutExperts() {
  if (open_ > 0)
    log::error("expert parallelism: {} sampling passes ran since the group last agreed its sampling was over "
               "(finish_expert_passes was not called): the group's other ranks are out of step", open_);
}

bool RolloutExperts::agree(int64_t tokens) {
  auto mine = torch::tensor({tokens}, torch::TensorOptions().dtype(torch::kLong)).to(device_);
  const auto all = group_.all_gather(mine).cpu();
  const auto* v = all.data_ptr<int64_t>();
  counts_.assign(static_cast<size_t>(group_.world_size()), 0);
  bool any = false;
  most_ = 0;
  for (int64_t q = 0; q < group_.world_size(); ++q) {
    if (v[q] < 0) continue;
    any = true;
    counts_[q] = v[q];
    most_ = std::max(most_, v[q]);
  }
  // Per chunk, the gathered rows that are real (the rest is padding, routed but never run): the same for every MoE
  // layer of the pass, so built once here.
  real_.clear();
  for (int64_t c = 0; c * chunk_ < most_; ++c) {
    const int64_t size = std::min(chunk_, most_ - c * chunk_);
    std::vector<int64_t> rows;
    for (int64_t q = 0; q < group_.world_size(); ++q)
      for (int64_t r = 0, k = std::clamp<int64_t>(counts_[q] - c * chunk_, 0, size); r < k; ++r)
        rows.push_back(q * size + r);
    real_.push_back(torch::tensor(rows, torch::TensorOptions().dtype(torch::kLong)).to(device_));
  }
  return any;
}

void RolloutExperts::begin_pass(int64_t tokens) {
  if (tokens < 0) throw std::invalid_argument("RolloutExperts::begin_pass: " + std::to_string(tokens) + " tokens");
  agree(tokens);
  tokens_ = tokens;
  ++stats_.passes;
  ++open_;
  stats_.rows += tokens;
}

at::Tensor RolloutExperts::feed_forward(int64_t index, const at::Tensor& n, at::Tensor* experts) {
  const auto layer = std::find_if(layers_.begin(), layers_.end(), [&](const Layer& l) { return l.index == index; });
  if (layer == layers_.end()) throw std::invalid_argument("RolloutExperts: layer " + std::to_string(index) + " is dense");
  if (n.dim() != 2 || n.size(0) != tokens_ || n.size(1) != hidden_)
    throw std::invalid_argument("RolloutExperts: layer " + std::to_string(index) + " got [" +
                                std::to_string(n.size(0)) + ", ...] rows for a pass of " + std::to_string(tokens_));
  auto out = torch::empty({tokens_, hidden_}, n.options());
  if (experts) *experts = torch::empty({tokens_, layer->top_k}, n.options().dtype(torch::kLong));
  const int64_t chunks = (most_ + chunk_ - 1) / chunk_;  // the same on every rank
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t from = std::min(c * chunk_, tokens_), rows = std::min(tokens_, (c + 1) * chunk_) - from;
    const int64_t size = std::min(chunk_, most_ - c * chunk_);  // rows a rank sends in this chunk (padded)
    auto mine = torch::zeros({size, hidden_}, n.options());
    if (rows > 0) mine.narrow(0, 0, rows).copy_(n.narrow(0, from, rows));
    at::Tensor own;
    auto sums = exchange(*layer, mine, c, experts ? &own : nullptr);
    if (rows > 0) out.narrow(0, from, rows).copy_(sums.narrow(0, 0, rows));
    if (experts && rows > 0) experts->narrow(0, from, rows).copy_(own);
  }
  return out;
}

at::Tensor RolloutExperts::exchange(const Layer& l, const at::Tensor& mine, int64_t chunk, at::Tensor* own) {
  torch::NoGradGuard no_grad;
  const int64_t W = group_.world_size(), size = mine.size(0);
  const auto all = group_.all_gather(mine);  // [W * size, H], rank q's rows at [q size, (q + 1) size)
  const auto& rows = real_[static_cast<size_t>(chunk)];
  auto sums = torch::zeros({W * size, hidden_}, mine.options().dtype(torch::kFloat));
  if (rows.numel() > 0) {
    const auto x = all.index_select(0, rows);
    const auto probs = torch::softmax(torch::matmul(x.to(torch::kFloat), l.router.to(torch::kFloat).t()), -1);
    auto [weights, experts] = probs.topk(l.top_k, -1);
    if (l.norm_topk) weights = weights / weights.sum(-1, true);
    if (own) {  // this rank's real rows sit after the lower ranks' in `rows` (real_: rank order)
      int64_t before = 0;
      for (int64_t q = 0; q < group_.rank(); ++q) before += std::clamp<int64_t>(counts_[q] - chunk * chunk_, 0, size);
      *own = experts.narrow(0, before, std::clamp<int64_t>(counts_[group_.rank()] - chunk * chunk_, 0, size));
    }
    const auto local = (experts >= first_) & (experts < first_ + per_);
    const auto pairs = local.nonzero();  // [P, 2]: (row of x, choice), row-major
    if (pairs.size(0) > 0) {
      const auto row = pairs.select(1, 0), choice = pairs.select(1, 1);
      const auto expert = experts.index({row, choice}) - first_;
      const auto weight = weights.index({row, choice});
      const auto order = std::get<1>(expert.sort(/*stable=*/true, 0, false));
      const auto counts = torch::bincount(expert, {}, per_).cpu();
      const auto* cnt = counts.data_ptr<int64_t>();
      stats_.pairs += pairs.size(0);
      int64_t at = 0;
      for (int64_t e = 0; e < per_; ++e) {
        if (cnt[e] == 0) continue;
        const auto sel = order.narrow(0, at, cnt[e]);
        at += cnt[e];
        const auto r = row.index_select(0, sel);
        const auto xe = x.index_select(0, r);
        const auto h = torch::silu(torch::matmul(xe, l.gate[e].t())) * torch::matmul(xe, l.up[e].t());
        const auto y = torch::matmul(h, l.down[e].t()).to(torch::kFloat) * weight.index_select(0, sel).unsqueeze(1);
        sums.index_add_(0, rows.index_select(0, r), y);
      }
    }
  }
  auto back = torch::empty({size * hidden_}, sums.options());  // (flat: the Gloo path copies flat chunks into it)
  group_.reduce_scatter(sums.view({-1}), back);
  return back.view({size, hidden_}).to(mine.scalar_type());
}

void RolloutExperts::finish() {
  torch::NoGradGuard no_grad;
  const auto none = torch::empty({0, hidden_}, torch::TensorOptions().dtype(dtype_).device(device_));
  while (agree(-1)) {  // a rank still samples: take part in its pass with no rows
    tokens_ = 0;
    ++stats_.idle_passes;
    for (const auto& l : layers_) feed_forward(l.index, none, nullptr);
  }
  tokens_ = 0;
  open_ = 0;
}

}  // namespace gspo::parallel
