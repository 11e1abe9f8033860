#include "gspo/train/engines/adamw8bit_optimizer.h"

#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/io/tensor_checks.h"

namespace gspo::train {

AdamW8bit::AdamW8bit(std::vector<at::Tensor> params, const config::OptimizerOptions& o)
    : params_(std::move(params)), h_{o.beta1, o.beta2, o.eps, o.weight_decay} {
  for (const auto& p : params_) {
    if (p.scalar_type() != torch::kFloat || !p.is_contiguous())
      throw std::invalid_argument("AdamW8bit: parameters must be contiguous float32");
    if (!params_.empty() && p.device() != params_.front().device())
      throw std::invalid_argument("AdamW8bit: parameters on more than one device");
    Slot s;
    s.moments = parallel::make_shard_moments(p.numel() >= parallel::kMin8bitSize ? 8 : 32, p.numel(), p.options());
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
    s.moments->step(p, grad.reshape({-1}), /*active=*/{}, lr, s.step, h_);  // every element: no mask to build or test
  }
}

int64_t AdamW8bit::state_bytes() const {
  int64_t bytes = 0;
  for (const auto& s : slots_) bytes += s.moments->bytes();
  return bytes;
}

// A tensor's moments as the checkpoint holds them: {exp_avg, its absmax, exp_avg_sq, its absmax}, float32 moments with
// an empty tensor in each absmax's place.
std::vector<at::Tensor> AdamW8bit::state() const {
  std::vector<at::Tensor> out;
  auto host = [](const at::Tensor& t) { return t.to(torch::kCPU).clone(); };
  for (const auto& s : slots_) {
    out.push_back(torch::tensor({s.step}, torch::kLong));
    const auto held = s.moments->tensors();
    if (held.size() == 4) {
      for (const auto& t : held) out.push_back(host(t));
    } else {
      for (const auto& t : {held[0], torch::empty({0}, torch::kFloat), held[1], torch::empty({0}, torch::kFloat)})
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
    const auto held = s.moments->tensors();
    const bool quantized = held.size() == 4;
    const bool same = quantized
        ? t[1].scalar_type() == torch::kUInt8 && t[1].sizes() == held[0].sizes() && t[2].sizes() == held[1].sizes() &&
              t[3].sizes() == held[2].sizes()
        : t[1].scalar_type() == torch::kFloat && t[1].sizes() == held[0].sizes() && t[3].sizes() == held[1].sizes();
    if (!same || t[0].numel() != 1)
      throw IoError("'" + from + "': tensor " + std::to_string(i) + "'s 8-bit AdamW state does not fit this model");
    const std::string what = "tensor " + std::to_string(i) + "'s ";
    io::require_finite(t[0], from, what + "step");
    s.step = t[0].item<int64_t>();
    io::require_step_count(s.step, from, what + "step");
    for (size_t k = 0; k < 4; ++k)  // (float32 moments: an empty tensor in each absmax's place)
      io::require_finite(t[1 + k], from, what + (quantized ? io::moment_name(k, 4) : io::moment_name(k / 2, 2)));
    if (quantized) {
      for (size_t k = 0; k < 4; ++k) held[k].copy_(t[1 + k]);
    } else {
      held[0].copy_(t[1]);
      held[1].copy_(t[3]);
    }
  }
}

}  // namespace gspo::train
