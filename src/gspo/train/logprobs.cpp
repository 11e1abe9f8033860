#include "gspo/train/logprobs.h"

#include <torch/torch.h>

#include "gspo/model/policy.h"

namespace gspo::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Rows of the batch per chunk so a chunk holds about `chunk_tokens` positions (at least one row).
int64_t rows_per_chunk(int64_t n, int64_t R, int64_t chunk_tokens) {
  if (chunk_tokens <= 0) return n;
  return std::max<int64_t>(1, std::min<int64_t>(n, chunk_tokens / std::max<int64_t>(1, R)));
}

// log_softmax(pred / T)[target] for pred [n, R, V] of any floating dtype, in float32, a chunk of rows at a time.
// Forward keeps only the [n, R] log-sum-exp; backward recomputes each chunk's softmax, so no float32 [n, R, V]
// tensor ever exists (only one chunk's worth), and the gradient comes back in pred's dtype.
struct ChunkedLogprob : torch::autograd::Function<ChunkedLogprob> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& pred, const at::Tensor& targets, double T,
                            int64_t chunk_tokens) {
    const int64_t n = pred.size(0), R = pred.size(1);
    auto lse = torch::empty({n, R}, pred.options().dtype(torch::kFloat));
    auto picked = torch::empty_like(lse);
    const int64_t step = rows_per_chunk(n, R, chunk_tokens);
    for (int64_t i = 0; i < n; i += step) {
      const int64_t c = std::min(step, n - i);
      auto x = pred.narrow(0, i, c).to(torch::kFloat);
      if (T != 1.0) x = x / T;
      lse.narrow(0, i, c).copy_(x.logsumexp(-1));
      picked.narrow(0, i, c).copy_(x.gather(-1, targets.narrow(0, i, c).unsqueeze(-1)).squeeze(-1));
    }
    ctx->save_for_backward({pred, targets, lse});
    ctx->saved_data["T"] = T;
    ctx->saved_data["step"] = step;
    return picked - lse;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto& pred = saved[0];
    const auto& targets = saved[1];
    const auto& lse = saved[2];
    const double T = ctx->saved_data["T"].toDouble();
    const int64_t step = ctx->saved_data["step"].toInt();
    auto g = grads[0].to(torch::kFloat);
    auto out = torch::empty_like(pred);
    const int64_t n = pred.size(0);
    for (int64_t i = 0; i < n; i += step) {
      const int64_t c = std::min(step, n - i);
      auto x = pred.narrow(0, i, c).to(torch::kFloat);
      if (T != 1.0) x = x / T;
      auto gi = g.narrow(0, i, c).unsqueeze(-1);                       // [c, R, 1]
      auto d = (x - lse.narrow(0, i, c).unsqueeze(-1)).exp_().mul_(-gi);  // -softmax * g
      d.scatter_add_(-1, targets.narrow(0, i, c).unsqueeze(-1), gi);    // + onehot * g
      if (T != 1.0) d.div_(T);
      out.narrow(0, i, c).copy_(d);
    }
    return {out, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor token_logprobs(const at::Tensor& pred, const at::Tensor& targets, double temperature, int64_t chunk_tokens) {
  return ChunkedLogprob::apply(pred, targets, temperature, chunk_tokens);
}

at::Tensor token_entropy(const at::Tensor& pred, double temperature, int64_t chunk_tokens) {
  torch::NoGradGuard g;
  const int64_t n = pred.size(0), R = pred.size(1);
  auto out = torch::empty({n, R}, pred.options().dtype(torch::kFloat));
  const int64_t step = rows_per_chunk(n, R, chunk_tokens);
  for (int64_t i = 0; i < n; i += step) {
    const int64_t c = std::min(step, n - i);
    auto x = pred.narrow(0, i, c).to(torch::kFloat);
    if (temperature != 1.0) x = x / temperature;
    auto lse = x.logsumexp(-1, /*keepdim=*/true);
    auto p = (x - lse).exp_();
    out.narrow(0, i, c).copy_(lse.squeeze(-1) - (p * x).sum(-1));
  }
  return out;
}

TokenLogprobs response_logprobs(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                                double temperature, Entropy entropy, int64_t chunk_tokens) {
  const int64_t R = ids.size(1) - P;
  // Position t predicts column t + 1: the response's R tokens are predicted by columns P-1 .. P+R-2, so the
  // lm_head runs from column P-1 (its last column, P+R-1, predicts past the response and is dropped).
  auto pred = policy.logits_from(ids, mask, P - 1).narrow(1, 0, R);  // [n, R, V]
  auto targets = ids.narrow(1, P, R);
  TokenLogprobs out;
  out.logprobs = token_logprobs(pred, targets, temperature, chunk_tokens);
  if (entropy == Entropy::kCompute) out.entropy = token_entropy(pred.detach(), temperature, chunk_tokens);
  return out;
}

}  // namespace gspo::train
