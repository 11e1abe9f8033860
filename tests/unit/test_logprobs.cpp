// Chunked float32 log-softmax (train/logprobs.h) against LibTorch's own log_softmax + autograd on the whole
// tensor: values, gradients and entropy, for every chunking, a strided view and bfloat16 logits.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "gspo/train/logprobs.h"

using namespace gspo;

namespace {
struct Ref {
  torch::Tensor lp, grad, entropy;
};

// The plain computation: log_softmax over the full float32 tensor, gathered, differentiated by autograd.
Ref reference(const torch::Tensor& pred, const torch::Tensor& targets, const torch::Tensor& w, double T) {
  auto x = pred.detach().to(torch::kFloat).requires_grad_(true);
  auto logp = (x / T).log_softmax(-1);
  auto lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
  (lp * w).sum().backward();
  auto p = logp.detach().exp();
  return {lp.detach(), x.grad(), -(p * logp.detach()).sum(-1)};
}
}  // namespace

TEST_CASE("chunked log-probs and gradients equal the whole-tensor log_softmax", "[logprobs]") {
  torch::manual_seed(11);
  const int64_t n = 5, R = 7, V = 50;
  auto big = torch::randn({n, R + 3, V}) * 3;
  auto pred_base = big.narrow(1, 2, R);  // a strided view, as the trainer passes (logits.narrow(1, P - 1, R))
  auto targets = torch::randint(V, {n, R});
  auto w = torch::randn({n, R});
  for (double T : {1.0, 0.7}) {
    auto ref = reference(pred_base, targets, w, T);
    for (int64_t chunk : {0, 1, 7, 8, 13, 1000}) {
      INFO("T " << T << " chunk_tokens " << chunk);
      auto leaf = big.clone().requires_grad_(true);
      auto pred = leaf.narrow(1, 2, R);
      auto lp = train::token_logprobs(pred, targets, T, chunk);
      CHECK(lp.scalar_type() == torch::kFloat);
      CHECK((lp - ref.lp).abs().max().item<double>() < 1e-5);
      (lp * w).sum().backward();
      auto g = leaf.grad().narrow(1, 2, R);
      CHECK((g - ref.grad).abs().max().item<double>() < 1e-6);
      CHECK(leaf.grad().narrow(1, 0, 2).abs().max().item<double>() == 0.0);  // outside the view: exactly no gradient
      auto ent = train::token_entropy(pred.detach(), T, chunk);
      CHECK((ent - ref.entropy).abs().max().item<double>() < 1e-5);
    }
  }
}

TEST_CASE("bfloat16 logits: float32 log-probs, gradient in bfloat16", "[logprobs]") {
  torch::manual_seed(12);
  const int64_t n = 3, R = 4, V = 64;
  auto pred = (torch::randn({n, R, V}) * 2).to(torch::kBFloat16).requires_grad_(true);
  auto targets = torch::randint(V, {n, R});
  auto w = torch::randn({n, R});
  auto ref = reference(pred, targets, w, 1.0);  // the same bf16 values, upcast, computed in float32
  auto lp = train::token_logprobs(pred, targets, 1.0, 5);
  CHECK(lp.scalar_type() == torch::kFloat);
  CHECK((lp - ref.lp).abs().max().item<double>() < 1e-5);
  (lp * w).sum().backward();
  CHECK(pred.grad().scalar_type() == torch::kBFloat16);
  // bf16 keeps 8 bits of mantissa: relative 2^-8 of the largest gradient.
  const double scale = ref.grad.abs().max().item<double>();
  CHECK((pred.grad().to(torch::kFloat) - ref.grad).abs().max().item<double>() < scale / 128);
}
