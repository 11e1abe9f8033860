// The per-layer path of training (model contract layer_api 1): gspo drives embed -> layers -> final_norm and a
// chunked LM head, optionally with activation checkpointing. Held against the model's own forward/logits_from
// path (an independent composition: the TorchScript module's _run and the chunked log-softmax over [n, R, V]) and
// against LibTorch's whole-tensor log_softmax for the head alone. Tolerances: float32, 1e-5 relative on gradients,
// 1e-5 absolute on log-probs and entropy (values of order 1-10).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/train/head_logprobs.h"
#include "gspo/train/logprobs.h"
#include "contract_helpers.h"
#include "helpers.h"
#include "pass_compare.h"

using namespace gspo;
using train::LogprobPass;
using test::check_same;
using test::PassResult;
using test::rel_err;

namespace {
const LogprobPass kForward{false, false, false};    // the model's logits_from and the [n, R, V] log-softmax
const LogprobPass kLayers{true, false, true};       // per-layer, chunked head
const LogprobPass kCheckpointed{true, true, true};  // per-layer, checkpointed layers, chunked head
const LogprobPass kCheckpointedFullHead{true, true, false};
}  // namespace

namespace {

// A rollout-shaped batch: prompts left-padded to P (lengths differ per row), responses right-padded to R (lengths
// differ too), ids below `vocab`.
struct Batch {
  torch::Tensor ids, mask;
  int64_t P, R;
};

Batch rollout_batch(int64_t vocab, uint64_t seed) {
  torch::manual_seed(seed);
  const int64_t n = 4, P = 6, R = 9;
  const int64_t prompt_len[n] = {6, 3, 5, 1}, resp_len[n] = {9, 4, 1, 7};
  auto ids = torch::randint(std::min<int64_t>(vocab, 250), {n, P + R}, torch::kLong);
  auto mask = torch::zeros({n, P + R}, torch::kLong);
  for (int64_t r = 0; r < n; ++r) {
    mask[r].narrow(0, P - prompt_len[r], prompt_len[r] + resp_len[r]).fill_(1);
  }
  return {ids, mask, P, R};
}

// Log-probs and entropy of the batch's responses, and the parameter gradients of sum(lp * w) over real tokens.
PassResult run_pass(model::Policy& policy, const Batch& b, LogprobPass pass, double T, int64_t chunk) {
  for (auto& p : policy.parameters()) p.mutable_grad() = torch::Tensor();
  auto out = train::response_logprobs(policy, b.ids, b.mask, b.P, T, train::Entropy::kCompute, chunk, pass);
  auto real = b.mask.narrow(1, b.P, b.R).to(torch::kFloat);
  torch::manual_seed(99);
  auto w = torch::randn(real.sizes()) * real;
  (out.logprobs * w).sum().backward();
  PassResult r{out.logprobs.detach() * real, out.entropy * real, {}};
  for (auto& p : policy.parameters()) r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return r;
}

}  // namespace

TEST_CASE("per-layer log-probs, entropy and gradients equal the forward path, with and without checkpointing",
          "[layers]") {
  // tiny: llama GQA, untied; tiny_qwen3: qk-norm, qkv bias, tied embeddings, one KV head; qwen3_moe_tiny: routed
  // experts and a dense layer (mlp_only_layers), untied.
  for (const std::string name : {"tiny.pt", "tiny_qwen3.pt", "qwen3_moe_tiny.pt"}) {
    auto policy = test::load_tiny(name);
    REQUIRE(policy.has_layers());
    const auto b = rollout_batch(policy.manifest().vocab_size, 5);
    for (double T : {1.0, 0.7}) {
      const auto want = run_pass(policy, b, kForward, T, 0);
      // The forward path must itself produce gradients everywhere, or the comparison proves little.
      double total = 0;
      for (auto& g : want.grads) total += g.abs().sum().item<double>();
      REQUIRE(total > 0);
      const std::string at = name + " T " + std::to_string(T);
      check_same(run_pass(policy, b, kLayers, T, 3), want, at + " layers, chunk 3");
      check_same(run_pass(policy, b, kCheckpointed, T, 1024), want, at + " checkpointed, chunk 1024");
      check_same(run_pass(policy, b, kCheckpointed, T, 1), want, at + " checkpointed, chunk 1");
      check_same(run_pass(policy, b, kCheckpointedFullHead, T, 5), want, at + " checkpointed, [N, V] head");
    }
  }
}

TEST_CASE("per-layer path on the real Qwen3 vocabulary (151,936 entries) equals the forward path", "[layers]") {
  const auto path = test::model_path("qwen3_tiny.pt");
  if (!test::shared_data_or_skip(test::shared_path("data/tokenizers/qwen3/tokenizer.json"))) return;
  auto policy = model::Policy::load(path);
  const auto b = rollout_batch(policy.manifest().vocab_size, 6);
  const auto want = run_pass(policy, b, kForward, 1.0, 0);
  check_same(run_pass(policy, b, kCheckpointed, 1.0, 7), want, "qwen3_tiny checkpointed, chunk 7");
}

TEST_CASE("the no-grad per-layer pass (old and reference log-probs) equals the forward path", "[layers]") {
  auto policy = test::load_tiny("tiny_qwen3.pt");
  const auto b = rollout_batch(policy.manifest().vocab_size, 7);
  torch::NoGradGuard g;
  auto real = b.mask.narrow(1, b.P, b.R) > 0;
  auto a = train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 4, kLayers);
  auto f = train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 4, kForward);
  CHECK((a.logprobs - f.logprobs).masked_select(real).abs().max().item<double>() < 1e-5);
  CHECK(a.logprobs.masked_select(~real).abs().max().item<double>() == 0.0);  // padded positions: exactly 0
  CHECK_FALSE(a.logprobs.requires_grad());
}

TEST_CASE("a model without the per-layer methods trains through forward, with the same gradients", "[layers]") {
  auto plain = test::load_tiny("tiny_without_layers.pt");
  auto layered = test::load_tiny("tiny.pt");
  CHECK_FALSE(plain.has_layers());
  const auto b = rollout_batch(plain.manifest().vocab_size, 8);
  // Asking a model without the methods for the checkpointed pass falls back to its forward.
  check_same(run_pass(plain, b, kCheckpointed, 1.0, 16), run_pass(layered, b, kCheckpointed, 1.0, 16),
             "tiny_without_layers vs tiny");
}

TEST_CASE("chunked head: log-probs, entropy and gradients equal LibTorch's whole-tensor log_softmax", "[layers]") {
  torch::manual_seed(21);
  const int64_t N = 11, H = 8, V = 37;
  auto h0 = torch::randn({N, H}), w0 = torch::randn({V, H}) * 0.5, b0 = torch::randn({V});
  auto targets = torch::randint(V, {N});
  auto g = torch::randn({N});
  for (bool with_bias : {true, false})
    for (double T : {1.0, 0.6}) {
      // Reference: one float64 product, log_softmax, autograd.
      auto h = h0.to(torch::kDouble).requires_grad_(true), w = w0.to(torch::kDouble).requires_grad_(true);
      auto bb = b0.to(torch::kDouble).requires_grad_(true);
      auto logp = (torch::linear(h, w, with_bias ? bb : torch::Tensor()) / T).log_softmax(-1);
      auto lp = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1);
      (lp * g.to(torch::kDouble)).sum().backward();
      auto ent = -(logp.exp() * logp).sum(-1).detach();
      for (int64_t chunk : {0, 1, 4, 11, 100}) {
        INFO("bias " << with_bias << " T " << T << " chunk " << chunk);
        auto hc = h0.clone().requires_grad_(true), wc = w0.clone().requires_grad_(true);
        auto bc = b0.clone().requires_grad_(true);
        auto out = train::head_logprobs(hc, wc, with_bias ? bc : torch::Tensor(), targets, T, chunk);
        CHECK((out.logprobs.to(torch::kDouble) - lp.detach()).abs().max().item<double>() < 1e-5);
        CHECK((out.entropy.to(torch::kDouble) - ent).abs().max().item<double>() < 1e-5);
        (out.logprobs * g).sum().backward();
        CHECK(rel_err(hc.grad().to(torch::kDouble), h.grad()) < 1e-5);
        CHECK(rel_err(wc.grad().to(torch::kDouble), w.grad()) < 1e-5);
        if (with_bias) CHECK(rel_err(bc.grad().to(torch::kDouble), bb.grad()) < 1e-5);
      }
    }
}

TEST_CASE("chunked head with bfloat16 weights: float32 log-probs within bf16 rounding, bf16 gradients", "[layers]") {
  torch::manual_seed(22);
  const int64_t N = 9, H = 16, V = 40;
  auto h = torch::randn({N, H}).to(torch::kBFloat16).requires_grad_(true);
  auto w = (torch::randn({V, H}) * 0.3).to(torch::kBFloat16).requires_grad_(true);
  auto targets = torch::randint(V, {N});
  auto out = train::head_logprobs(h, w, torch::Tensor(), targets, 1.0, 4);
  CHECK(out.logprobs.scalar_type() == torch::kFloat);
  // The product in bf16 (as the model's own head), the log-softmax of its float32 upcast.
  auto ref = torch::linear(h.detach(), w.detach()).to(torch::kFloat).log_softmax(-1).gather(-1, targets.unsqueeze(-1));
  CHECK((out.logprobs - ref.squeeze(-1)).abs().max().item<double>() < 1e-5);
  out.logprobs.sum().backward();
  CHECK(w.grad().scalar_type() == torch::kBFloat16);
  CHECK(h.grad().scalar_type() == torch::kBFloat16);
  CHECK(w.grad().abs().sum().item<double>() > 0);
}

TEST_CASE("inspect rejects per-layer methods of an unknown version or that disagree with forward", "[layers][contract]") {
  const auto rejects = test::check_contract_rejects;
  rejects("broken_layer_api.pt", "layer_api() is 2, this gspo knows version 1");
  rejects("broken_layer.pt", "the per-layer methods (embed -> layer 0..0 -> final_norm -> head) disagree with forward");
  auto ok = test::load_tiny("qwen3_moe_tiny.pt");
  CHECK(model::check_contract(ok) < 1e-3);
}
