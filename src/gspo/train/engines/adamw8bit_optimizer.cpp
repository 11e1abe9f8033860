#include "gspo/train/engines/adamw8bit_optimizer.h"

#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/io/checkpoint_check.h"

namespace gspo::train {

AdamW8bit::AdamW8bit(std::vector<at::Tensor> params, const config::OptimizerOptions& o)
    : params_(std::move(params)), h_{o.beta1, o.beta2, o.eps, o.weight_decay} {
  for (const auto& p : params_) {
    if (p.scalar_type() != torch::kFloat || !p.is_contiguous())
      throw std::invalid_argument("AdamW8bit: parameters must be contiguous float32");
    Slot s;
    s.quantized = p.numel() >= parallel::kMin8bitSize;
    if (s.quantized) {
      if (!maps_) maps_ = std::make_unique<parallel::Maps8bit>(parallel::Maps8bit::make(p.device()));
      if (maps_->m.values.device() != p.device())
        throw std::invalid_argument("AdamW8bit: parameters on more than one device");
      s.q = parallel::Moments8bit::zeros(p.numel(), p.options());
    } else {
      s.m = torch::zeros({p.numel()}, p.options());
      s.v = torch::zeros({p.numel()}, p.options());
    }
    slots_.push_back(std::move(s));
  }
}

void AdamW8bit::step(double lr) {
  torch::NoGradGuard g;
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& grad = params_[i].grad();
    if (!grad.defined()) continue;
    auto& s = slots_[i];
    ++s.step;
    auto p = params_[i].detach().view({-1});
    if (s.quantized) {
      parallel::adamw8bit_step(p, grad.reshape({-1}), s.q, *maps_, lr, s.step, h_);
    } else {
      auto all = torch::ones({p.numel()}, p.options().dtype(torch::kBool));
      parallel::adamw_shard_step(p, s.m, s.v, grad.reshape({-1}), all, lr, s.step, h_);
    }
  }
}

int64_t AdamW8bit::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& s : slots_)
    bytes += s.quantized ? s.q.bytes() : static_cast<int64_t>(s.m.nbytes() + s.v.nbytes());
  return bytes;
}

std::vector<at::Tensor> AdamW8bit::state() const {
  std::vector<at::Tensor> out;
  auto host = [](const at::Tensor& t) { return t.to(torch::kCPU).clone(); };
  for (const auto& s : slots_) {
    out.push_back(torch::tensor({s.step}, torch::kLong));
    if (s.quantized) {
      for (const auto& t : {s.q.m_codes, s.q.m_absmax, s.q.v_codes, s.q.v_absmax}) out.push_back(host(t));
    } else {
      for (const auto& t : {s.m, torch::empty({0}, torch::kFloat), s.v, torch::empty({0}, torch::kFloat)})
        out.push_back(host(t));
    }
  }
  return out;
}

void AdamW8bit::load_state(const std::vector<at::Tensor>& st, const std::string& from) {
  if (st.size() != 5 * slots_.size())
    throw IoError("'" + from + "' holds 8-bit AdamW state for " + std::to_string(st.size() / 5) +
                  " tensors; this model's optimizer has " + std::to_string(slots_.size()));
  for (size_t i = 0; i < slots_.size(); ++i) {
    auto& s = slots_[i];
    const auto* t = &st[5 * i];
    const bool same = s.quantized
        ? t[1].scalar_type() == torch::kUInt8 && t[1].sizes() == s.q.m_codes.sizes() &&
              t[2].sizes() == s.q.m_absmax.sizes() && t[3].sizes() == s.q.v_codes.sizes()
        : t[1].scalar_type() == torch::kFloat && t[1].sizes() == s.m.sizes() && t[3].sizes() == s.v.sizes();
    if (!same || t[0].numel() != 1)
      throw IoError("'" + from + "': tensor " + std::to_string(i) + "'s 8-bit AdamW state does not fit this model");
    const std::string what = "tensor " + std::to_string(i) + "'s ";
    io::require_finite(t[0], from, what + "step");
    s.step = t[0].item<int64_t>();
    io::require_step_count(s.step, from, what + "step");
    for (size_t k = 0; k < 4; ++k)  // (float32 moments: an empty tensor in each absmax's place)
      io::require_finite(t[1 + k], from, what + (s.quantized ? io::moment_name(k, 4) : io::moment_name(k / 2, 2)));
    if (s.quantized) {
      s.q.m_codes.copy_(t[1]);
      s.q.m_absmax.copy_(t[2]);
      s.q.v_codes.copy_(t[3]);
      s.q.v_absmax.copy_(t[4]);
    } else {
      s.m.copy_(t[1]);
      s.v.copy_(t[3]);
    }
  }
}

}  // namespace gspo::train
