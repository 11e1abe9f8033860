#include "gspo/train/head_logprobs.h"

#include <torch/torch.h>

namespace gspo::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Targets [n] as [n, 1]; [n, K] as they are.
at::Tensor as_columns(const at::Tensor& t) { return t.dim() == 1 ? t.unsqueeze(-1) : t; }

// Float32 logits / temperature of hidden rows [i, i + c): [c, V].
at::Tensor chunk_logits(const at::Tensor& h, const at::Tensor& w, const at::Tensor& b, double T) {
  auto x = at::linear(h, w, b).to(at::kFloat);
  if (T != 1.0) x.div_(T);
  return x;
}

struct ChunkedHead : torch::autograd::Function<ChunkedHead> {
  // `bias` is optional: autograd Functions take no undefined at::Tensor argument, an empty optional is allowed.
  static tensor_list forward(AutogradContext* ctx, const at::Tensor& hidden, const at::Tensor& weight,
                             const std::optional<at::Tensor>& bias_arg, const at::Tensor& targets, double T,
                             int64_t step) {
    const at::Tensor bias = bias_arg.value_or(at::Tensor());
    const int64_t n = hidden.size(0);
    const auto many = as_columns(targets);  // [n, K]
    auto opts = hidden.options().dtype(at::kFloat);
    auto lse = torch::empty({n}, opts), entropy = torch::empty({n}, opts);
    auto picked = torch::empty({n, many.size(1)}, opts);
    for (int64_t i = 0; i < n; i += step) {
      const int64_t c = std::min(step, n - i);
      auto x = chunk_logits(hidden.narrow(0, i, c), weight, bias, T);
      auto l = x.logsumexp(-1, /*keepdim=*/true);
      lse.narrow(0, i, c).copy_(l.squeeze(-1));
      picked.narrow(0, i, c).copy_(x.gather(-1, many.narrow(0, i, c)));
      auto plogit = (x - l).exp_().mul_(x).sum(-1);  // sum_v p_v x_v
      entropy.narrow(0, i, c).copy_(l.squeeze(-1) - plogit);
    }
    ctx->save_for_backward({hidden, weight, bias, targets, lse});
    ctx->saved_data["T"] = T;
    ctx->saved_data["step"] = step;
    ctx->mark_non_differentiable({entropy});
    auto out = picked - lse.unsqueeze(-1);
    return {targets.dim() == 1 ? out.squeeze(-1) : out, entropy};
  }

  // d logprob_t / d logits = onehot(target) - softmax, divided by T; with K targets a row the gradients add up:
  // sum_k g_k onehot(target_k) - (sum_k g_k) softmax. The chunk's logits are recomputed.
  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto s = ctx->get_saved_variables();
    const auto &hidden = s[0], &weight = s[1], &bias = s[2], &targets = s[3], &lse = s[4];
    const double T = ctx->saved_data["T"].toDouble();
    const int64_t step = ctx->saved_data["step"].toInt();
    const int64_t n = hidden.size(0);
    const auto many = as_columns(targets);
    auto g = grads[0].defined() ? as_columns(grads[0].to(at::kFloat)) : torch::zeros(many.sizes(), lse.options());
    const bool wide = weight.scalar_type() != at::kFloat;  // accumulate 16-bit weight gradients in float32
    // A frozen head (low-rank adapters train, model/lora.h) needs no weight gradient: neither its [V, H] float32
    // accumulator nor the product that fills it, as costly as the hidden states' own.
    const bool need_w = ctx->needs_input_grad(1), need_b = bias.defined() && ctx->needs_input_grad(2);
    auto gh = torch::empty_like(hidden);
    auto gw = need_w ? torch::zeros(weight.sizes(), weight.options().dtype(at::kFloat)) : at::Tensor();
    auto gb = need_b ? torch::zeros(bias.sizes(), bias.options().dtype(at::kFloat)) : at::Tensor();
    for (int64_t i = 0; i < n; i += step) {
      const int64_t c = std::min(step, n - i);
      auto h = hidden.narrow(0, i, c);
      auto gi = g.narrow(0, i, c);                                                      // [c, K]
      auto d = chunk_logits(h, weight, bias, T).sub_(lse.narrow(0, i, c).unsqueeze(-1)).exp_();
      d.mul_(-gi.sum(-1, /*keepdim=*/true));
      d.scatter_add_(-1, many.narrow(0, i, c), gi);
      if (T != 1.0) d.div_(T);                                                          // [c, V] float32
      auto dw = wide ? d.to(weight.scalar_type()) : d;
      gh.narrow(0, i, c).copy_(dw.mm(weight));
      if (need_w && wide)
        gw.add_(dw.t().mm(h).to(at::kFloat));
      else if (need_w)
        gw.addmm_(d.t(), h);
      if (need_b) gb.add_(d.sum(0));
    }
    return {gh, need_w ? gw.to(weight.scalar_type()) : at::Tensor(), need_b ? gb.to(bias.scalar_type()) : at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

HeadLogprobs head_logprobs(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& bias,
                           const at::Tensor& targets, double temperature, int64_t chunk_tokens) {
  const int64_t n = hidden.size(0);
  const int64_t step = chunk_tokens > 0 ? std::max<int64_t>(1, std::min(chunk_tokens, n)) : std::max<int64_t>(1, n);
  const std::optional<at::Tensor> b = bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt;
  auto out = ChunkedHead::apply(hidden, weight, b, targets, temperature, step);
  return {out[0], out[1]};
}

}  // namespace gspo::train
