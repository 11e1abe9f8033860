#include "gspo/model/lora.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"

namespace gspo::model {
namespace {

// "layers.<i>.<path>.<proj>.weight": the decoder layer and whether <proj> is a target (inside an MoE's experts only
// when `experts`; a router, "mlp.gate", is never one).
bool targeted(const std::string& name, const LoraSpec& spec, int64_t& layer) {
  static const std::regex kWeight(R"((^|\.)layers\.(\d+)\.(.*\.)?([A-Za-z0-9_]+)\.weight$)");
  std::smatch m;
  if (!std::regex_search(name, m, kWeight)) return false;
  if (std::find(spec.targets.begin(), spec.targets.end(), m[4].str()) == spec.targets.end()) return false;
  if (!spec.experts && name.find(".experts.") != std::string::npos) return false;
  layer = std::stoll(m[2].str());
  return true;
}

}  // namespace

LoraSpec lora_spec(const config::ModelOptions& m, uint64_t seed) {
  LoraSpec spec;
  spec.rank = m.lora_rank;
  spec.alpha = m.lora_alpha;
  spec.targets = m.lora_targets;
  spec.experts = m.lora_experts;
  spec.seed = seed;
  return spec;
}

LoraAdapters::LoraAdapters(Policy& policy, const LoraSpec& spec)
    : policy_(policy), scale_(spec.alpha / static_cast<double>(std::max<int64_t>(spec.rank, 1))) {
  if (spec.rank < 1) throw ConfigError("model.lora_rank must be >= 1 for adapters (0 turns them off)");
  if (!policy.has_layers())
    throw ConfigError("model.lora_rank: '" + policy.path() + "' has no per-layer methods (layer_api), through which "
                      "adapters merge into each decoder layer; re-export it with scripts/export_hf.py");
  const int64_t L = policy.num_layers();
  by_layer_.resize(L);
  holds_.assign(L, 0);
  torch::NoGradGuard no_grad;
  for (auto& p : policy.parameters()) p.requires_grad_(false);  // the base is frozen: no gradient storage, ever
  auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed);
  for (const auto& [name, w] : policy.named_parameters()) {
    int64_t layer = 0;
    if (w.dim() != 2 || !targeted(name, spec, layer) || layer >= L) continue;
    const int64_t out = w.size(0), in = w.size(1);
    if (spec.rank > std::min(out, in))  // checked before anything is allocated: a huge rank dies in the allocator
      throw ConfigError(spec.rank_from + " " + std::to_string(spec.rank) + " is above the smaller dimension of '" +
                        name + "' [" + std::to_string(out) + ", " + std::to_string(in) + "]: B A of rank r has rank " +
                        "at most min(out, in) = " + std::to_string(std::min(out, in)) + ", so a larger r adds only " +
                        "memory; use at most that (typical: 8-64)");
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));  // kaiming_uniform_(a = sqrt(5)), as PEFT
    auto A = torch::empty({spec.rank, in}, torch::kFloat).uniform_(-bound, bound, gen).to(w.device());
    auto B = torch::zeros({out, spec.rank}, torch::TensorOptions().dtype(torch::kFloat).device(w.device()));
    by_layer_[layer].push_back(adapters_.size());
    adapters_.push_back({name, layer, A.requires_grad_(true), B.requires_grad_(true)});
  }
  if (adapters_.empty()) {
    std::string list;
    for (const auto& t : spec.targets) list += (list.empty() ? "" : ", ") + t;
    throw ConfigError("model.lora_targets [" + list + "] match no decoder-layer weight of '" + policy.path() +
                      "' (names such as layers.0.self_attn.q_proj.weight)");
  }
  base_.resize(adapters_.size());
}

LoraAdapters::~LoraAdapters() {
  for (int64_t l = 0; l < static_cast<int64_t>(holds_.size()); ++l)
    if (holds_[l] > 0) holds_[l] = 1, release(l);  // gives the base weights back
}

std::vector<at::Tensor> LoraAdapters::parameters() const {
  std::vector<at::Tensor> out;
  for (const auto& a : adapters_) out.push_back(a.A), out.push_back(a.B);
  return out;
}

void LoraAdapters::move_to(c10::Device device) {
  torch::NoGradGuard g;
  for (auto& a : adapters_) {
    if (a.A.device() == device) continue;
    a.A = a.A.detach().to(device).requires_grad_(true);
    a.B = a.B.detach().to(device).requires_grad_(true);
  }
}

int64_t LoraAdapters::num_parameters() const {
  int64_t n = 0;
  for (const auto& a : adapters_) n += a.A.numel() + a.B.numel();
  return n;
}

void LoraAdapters::set_enabled(bool on) {
  for (int64_t h : holds_)
    if (h > 0) throw std::logic_error("LoraAdapters::set_enabled while a decoder layer is held");
  enabled_ = on;
}

void LoraAdapters::acquire(int64_t layer) {
  if (!enabled_) return;
  if (holds_.at(layer)++ > 0) return;
  torch::AutoGradMode on(true);  // also inside a checkpointed layer's backward, where grad mode is off
  for (auto i : by_layer_[layer]) {
    auto& a = adapters_[i];
    const auto w = policy_.parameter(a.name);
    auto merged = (w.to(torch::kFloat) + scale_ * a.B.matmul(a.A)).to(w.scalar_type());
    base_[i] = policy_.swap_parameter(a.name, merged);
  }
}

void LoraAdapters::release(int64_t layer) {
  if (!enabled_) return;
  if (--holds_.at(layer) > 0) return;
  for (auto i : by_layer_[layer]) {
    policy_.swap_parameter(adapters_[i].name, base_[i]);
    base_[i] = at::Tensor();
  }
}

int64_t LoraAdapters::share_untargeted(Policy& copy) const {
  std::vector<std::string> targeted;
  for (const auto& a : adapters_) targeted.push_back(a.name);
  std::sort(targeted.begin(), targeted.end());
  int64_t shared = 0;
  for (const auto& [name, w] : policy_.named_parameters()) {
    if (std::binary_search(targeted.begin(), targeted.end(), name)) continue;
    const auto mine = copy.parameter(name);
    if (mine.scalar_type() != w.scalar_type() || !mine.sizes().equals(w.sizes())) continue;
    copy.swap_parameter(name, w);
    shared += w.numel();
  }
  // A tied head is the embedding under a second name, which named_parameters() lists once: the copy's own head would
  // stay (a vocab x hidden tensor), so it takes the policy's too (the contract's head is lm_head).
  const auto head = policy_.head_weight();
  const auto mine = copy.head_weight();
  if (mine.unsafeGetTensorImpl() != head.unsafeGetTensorImpl() && mine.scalar_type() == head.scalar_type() &&
      mine.sizes().equals(head.sizes())) {
    try {
      copy.swap_parameter("lm_head.weight", head);
    } catch (const std::out_of_range&) {  // a head under another name: it stays the copy's own
    }
  }
  return shared;
}

void LoraAdapters::merge_into(Policy& target) const {
  torch::NoGradGuard no_grad;
  for (const auto& a : adapters_) {
    const auto base = policy_.parameter(a.name);
    auto dst = target.parameter(a.name);
    dst.copy_(base.to(torch::kFloat) + scale_ * a.B.matmul(a.A));
  }
}

}  // namespace gspo::model
