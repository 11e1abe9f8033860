// Shared-prefix (tree) training, #71 (train/shared_prefix.h): a group's prompt run once in the per-layer pass, every
// response attending to it under a tree mask. The packing against a layout worked out by hand; the log-probs, entropy
// and parameter gradients against the unshared per-layer pass of the same rows (the reference: each row its own
// prompt; tolerances: float32, 1e-5 absolute on log-probs and entropy, 1e-5 relative on each parameter's gradient),
// dense and MoE, checkpointing on and off, groups whole, split and of one row, packed under a tree mask or split into
// prompts and responses for the model's shared_layer; MoE routing recorded and replayed (Routing Replay) through
// both layouts as the unshared pass records it; rows whose prompts differ refused.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "gspo/model/policy.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/routing.h"
#include "gspo/train/shared_prefix.h"
#include "helpers.h"
#include "pass_compare.h"

using namespace gspo;
using train::LogprobPass;
using test::check_same;
using test::PassResult;

namespace {

std::vector<int64_t> values(const at::Tensor& t) {
  const auto c = t.to(torch::kLong).contiguous().cpu();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

// Rows in the rollout layout: groups of G rows sharing a prompt (each group its own prompt length, left-padded to P),
// each row its own response length (right-padded to R); `group[r]` the row's group.
struct Batch {
  torch::Tensor ids, mask;
  int64_t P = 0, R = 0;
  std::vector<int64_t> group;
};

Batch grouped_batch(int64_t vocab, uint64_t seed) {
  torch::manual_seed(static_cast<int64_t>(seed));
  const std::vector<int64_t> prompt_len{7, 3, 5}, resp_len{9, 4, 1, 6, 2, 8, 5, 9, 3};
  const int64_t G = 3, n = 9, P = 7, R = 9;
  Batch b{torch::randint(3, std::min<int64_t>(vocab, 250), {n, P + R}, torch::kLong),
          torch::zeros({n, P + R}, torch::kLong), P, R, {}};
  for (int64_t r = 0; r < n; ++r) {
    const int64_t g = r / G, p = prompt_len[static_cast<size_t>(g)];
    b.ids[r].narrow(0, 0, P).copy_(b.ids[g * G].narrow(0, 0, P));  // the group's prompt
    b.mask[r].narrow(0, P - p, p + resp_len[static_cast<size_t>(r)]).fill_(1);
    b.group.push_back(g);
  }
  return b;
}

// Log-probs and entropy of the responses and the parameter gradients of sum(lp * w), rows sharing prompts by `group`
// (empty: each its own).
// `whole` (KnownShape::whole_groups): the ids name groups, run split through Policy::shared_layer (or packed, when
// `runner` says it cannot); `lengths`: the rows' prompt and response lengths handed in (no device read for them).
PassResult run_pass(model::Policy& policy, const Batch& b, bool checkpoint, const std::vector<int64_t>& group,
                    bool whole = false, bool lengths = false, train::LayerRunner* runner = nullptr) {
  for (auto& p : policy.parameters()) p.mutable_grad() = torch::Tensor();
  train::KnownShape known;
  known.prompt_group = group;
  known.whole_groups = whole;
  if (lengths) {
    const auto prompt = b.mask.narrow(1, 0, b.P).sum(1), all = b.mask.sum(1);
    known.prompt_len = values(prompt);
    known.response_len = values(all - prompt);
  }
  LogprobPass pass{true, checkpoint, true};
  pass.runner = runner;
  auto out = train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kCompute, 5, pass, {}, known);
  const auto real = b.mask.narrow(1, b.P, b.R).to(torch::kFloat);
  torch::manual_seed(99);
  const auto w = torch::randn(real.sizes()) * real;
  (out.logprobs * w).sum().backward();
  PassResult r{out.logprobs.detach() * real, out.entropy * real, {}, out.host_reads};
  for (auto& p : policy.parameters()) r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
  return r;
}

// The policy's own layers, but never through Policy::shared_layer (as expert parallelism's runner): whole groups
// then run packed.
class NoSplit final : public train::LayerRunner {
 public:
  at::Tensor run(model::Policy& policy, int64_t index, const at::Tensor& x, const model::LayerContext& ctx,
                 bool checkpoint, const at::Tensor& replay, at::Tensor* chosen) override {
    return train::own_layers().run(policy, index, x, ctx, checkpoint, replay, chosen);
  }
  bool needs_layers() const override { return false; }
};

}  // namespace

TEST_CASE("shared prefix: rows pack by group, the prompt once, each response after it", "[shared_prefix]") {
  // Rows 0, 1, 3 share a prompt of 3 tokens (responses of 2, 1 and 0 tokens); row 2 is alone (2 + 2). W = 5.
  const auto p = train::pack_rows({0, 0, 1, 0}, {3, 3, 2, 3}, {2, 1, 2, 0}, 5, c10::kCPU);
  CHECK(p.segment.sizes() == at::IntArrayRef({2, 6}));
  CHECK(values(p.segment) == std::vector<int64_t>{0, 0, 0, 1, 1, 2, 0, 0, 1, 1, -1, -1});
  // Packed position -> right-aligned flat index (row * 5 + column): the group's prompt from its first row.
  CHECK(values(p.source) == std::vector<int64_t>{0, 1, 2, 3, 4, 8, 10, 11, 12, 13, 0, 0});
  // Right-aligned position -> packed: every row's prompt columns to the one prompt; padding to 0.
  CHECK(values(p.target) == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2, 5, 0, 6, 7, 8, 9, 0, 0, 1, 2, 0, 0});
  // Each response token's predictor: its first token's is the prompt's last position.
  CHECK(values(p.predict) == std::vector<int64_t>{2, 3, 2, 7, 8});
  CHECK(p.packed_tokens == 10);
  CHECK(p.unshared_tokens == 16);

  const auto m = train::tree_mask(p).squeeze(1);  // [2, 6, 6]
  auto row = [&](int64_t b, int64_t q) { return values(m[b][q]); };
  CHECK(row(0, 2) == std::vector<int64_t>{1, 1, 1, 0, 0, 0});  // the prompt: causal within it
  CHECK(row(0, 4) == std::vector<int64_t>{1, 1, 1, 1, 1, 0});  // row 0's second token: the prompt and its own first
  CHECK(row(0, 5) == std::vector<int64_t>{1, 1, 1, 0, 0, 1});  // row 1's token: the prompt, not row 0's tokens
  CHECK(row(1, 3) == std::vector<int64_t>{1, 1, 1, 1, 0, 0});  // row 2 alone: its prompt and its own tokens
  CHECK(row(1, 4) == std::vector<int64_t>{1, 1, 0, 0, 1, 0});  // padding: itself (never fully masked), unread

  CHECK_THROWS_WITH(train::pack_rows({0, 0}, {3, 2}, {1, 1}, 5, c10::kCPU), Catch::Contains("claims the prompt of row 0"));
  CHECK_THROWS_WITH(train::pack_rows({0}, {3}, {3}, 5, c10::kCPU), Catch::Contains("in 5 columns"));
}

TEST_CASE("shared prefix: whole groups split into prompts and responses for shared_layer", "[shared_prefix]") {
  // The rows of the case above: group 0 (rows 0, 1, 3) a prompt of 3, group 1 (row 2) one of 2; responses 2, 1, 2, 0.
  // Flat layout: 2 prompts of P = 3 columns, then 4 responses of R = 2.
  const auto p = train::pack_whole({0, 0, 1, 0}, {3, 3, 2, 3}, {2, 1, 2, 0}, 5, c10::kCPU);
  REQUIRE(p.split());
  CHECK(p.prompts == 2);
  CHECK(p.prompt_width == 3);
  CHECK(p.response_width == 2);
  CHECK(p.segment.sizes() == at::IntArrayRef({1, 14}));
  CHECK(values(p.segment) == std::vector<int64_t>{0, 0, 0, 0, 0, -1, 1, 1, 1, -1, 1, 1, -1, -1});
  CHECK(values(p.source) == std::vector<int64_t>{0, 1, 2, 10, 11, 0, 3, 4, 8, 0, 12, 13, 0, 0});
  CHECK(values(p.target) == std::vector<int64_t>{0, 1, 2, 6, 7, 0, 1, 2, 8, 0, 3, 4, 10, 11, 0, 0, 1, 2, 0, 0});
  CHECK(values(p.predict) == std::vector<int64_t>{2, 6, 2, 4, 10});
  CHECK(values(p.group) == std::vector<int64_t>{0, 0, 1, 0});
  CHECK(values(p.prompt_tokens) == std::vector<int64_t>{3, 2});
  CHECK(p.first == std::vector<int64_t>{0, 0, 2, 0});
  CHECK(p.packed_tokens == 10);
  CHECK(p.unshared_tokens == 16);
  // The flat layout as prompts and responses, and back.
  const auto flat = torch::arange(14).view({1, 14, 1});
  const auto [prompts, responses] = train::split_prompts(p, flat);
  CHECK(prompts.sizes() == at::IntArrayRef({2, 3, 1}));
  CHECK(responses.sizes() == at::IntArrayRef({4, 2, 1}));
  CHECK(values(responses[1]) == std::vector<int64_t>{8, 9});
  CHECK(torch::equal(train::join_prompts(prompts, responses), flat));
  CHECK_THROWS_WITH(train::pack_whole({0, 0}, {3, 2}, {1, 1}, 5, c10::kCPU), Catch::Contains("claims the prompt of row 0"));
}

TEST_CASE("shared prefix: log-probs, entropy and gradients equal the unshared pass, dense and MoE, checkpointed or not",
          "[shared_prefix][layers]") {
  for (const char* name : {"tiny.pt", "qwen3_moe_tiny.pt"}) {
    auto policy = test::load_tiny(name);
    REQUIRE(policy.has_layers());
    const auto b = grouped_batch(policy.manifest().vocab_size, 5);
    for (bool checkpoint : {false, true}) {
      const std::string at = std::string(name) + (checkpoint ? ", checkpointed" : "");
      const auto want = run_pass(policy, b, checkpoint, {});
      const auto shared = run_pass(policy, b, checkpoint, b.group);
      check_same(shared, want, at + ": groups of 3");
      CHECK(shared.reads == want.reads + 2);
      // A micro-batch holding part of a group, and rows alone: they share what they can.
      check_same(run_pass(policy, b, checkpoint, {0, 0, 9, 1, 1, 1, 2, 7, 8}), want, at + ": split groups");
      check_same(run_pass(policy, b, checkpoint, {0, 1, 2, 3, 4, 5, 6, 7, 8}), want, at + ": one row a group");
      // Whole groups through the model's shared_layer (prompts and responses apart), the lengths known or read.
      REQUIRE(policy.has_shared_layer());
      const auto split = run_pass(policy, b, checkpoint, b.group, true, true);
      check_same(split, want, at + ": whole groups, shared_layer");
      CHECK(split.reads == want.reads + 1);
      check_same(run_pass(policy, b, checkpoint, {0, 0, 9, 1, 1, 1, 2, 7, 8}, true), want, at + ": split, part groups");
      // A runner that cannot run shared_layer: the whole groups run packed.
      NoSplit packed_only;
      check_same(run_pass(policy, b, checkpoint, b.group, true, false, &packed_only), want, at + ": whole, packed");
    }
  }
}

TEST_CASE("shared prefix: whole groups run through the model's shared_layer, unless the runner cannot",
          "[shared_prefix][layers]") {
  // broken_shared_layer.pt's shared_layer runs each response without its prompt: the split pass shows it, the packed
  // one (its layer()) does not.
  auto policy = test::load_tiny("broken_shared_layer.pt");
  REQUIRE(policy.has_shared_layer());
  const auto b = grouped_batch(policy.manifest().vocab_size, 4);
  const auto want = run_pass(policy, b, false, {});
  CHECK((run_pass(policy, b, false, b.group, true).lp - want.lp).abs().max().item<double>() > 1e-3);
  NoSplit packed_only;
  check_same(run_pass(policy, b, false, b.group, true, false, &packed_only), want, "packed");
  check_same(run_pass(policy, b, false, b.group, false), want, "packed ids");
}

TEST_CASE("shared prefix: MoE routing recorded and replayed through the packed rows as the unshared pass does",
          "[shared_prefix][routing][moe]") {
  auto policy = test::load_tiny("qwen3_moe_tiny.pt");
  const auto b = grouped_batch(policy.manifest().vocab_size, 8);
  torch::NoGradGuard no_grad;
  const LogprobPass layers{true, false, true};
  train::RouteRecord own;
  const auto lp = train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 64, layers,
                                           {nullptr, &own}).logprobs;
  // Real tokens of the right-aligned rows (padding holds some token's experts: nobody reads them).
  const auto width = own.response.size(1);
  const auto real = torch::arange(width).unsqueeze(0) < b.mask.sum(1, true);
  const auto real_r = b.mask.narrow(1, b.P, b.R).to(torch::kFloat);
  for (bool whole : {false, true}) {  // packed rows under the tree mask; whole groups through shared_layer
    INFO((whole ? "whole groups, shared_layer" : "packed rows"));
    train::KnownShape shared;
    shared.prompt_group = b.group;
    shared.whole_groups = whole;
    train::RouteRecord packed;
    train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 64, layers, {nullptr, &packed},
                             shared);
    int64_t layers_compared = 0;
    for (size_t i = 0; i < own.experts.size(); ++i) {
      if (!own.experts[i].defined()) continue;
      ++layers_compared;
      const auto a = std::get<0>(own.experts[i].sort(-1)), c = std::get<0>(packed.experts[i].sort(-1));
      CHECK(a.eq(c).all(-1).logical_or(real.logical_not()).all().item<bool>());
    }
    CHECK(layers_compared == 2);
    CHECK(torch::equal(own.response, packed.response));
    // Replaying the record (Routing Replay) through the shared layout gives the unshared log-probs.
    const auto replayed = train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 64,
                                                   layers, {&own, nullptr}, shared).logprobs;
    CHECK(((replayed - lp) * real_r).abs().max().item<double>() < 1e-5);
    // Another record (one layer's experts moved) changes them: the shared pass takes the record it is given.
    auto moved = own;
    for (auto& e : moved.experts)
      if (e.defined()) e = (e + 1).remainder(4);
    const auto other = train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 64, layers,
                                                {&moved, nullptr}, shared).logprobs;
    CHECK(((other - lp) * real_r).abs().max().item<double>() > 1e-3);
  }
}

TEST_CASE("shared prefix: rows that claim a group's prompt but differ from it are refused", "[shared_prefix]") {
  auto policy = test::load_tiny("tiny.pt");
  auto b = grouped_batch(policy.manifest().vocab_size, 3);
  b.ids[4][b.P - 1] = (b.ids[4][b.P - 1].item<int64_t>() - 3 + 1) % 240 + 3;  // its last prompt token, another id
  train::KnownShape known;
  known.prompt_group = b.group;
  torch::NoGradGuard no_grad;
  CHECK_THROWS_WITH(train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 64,
                                             LogprobPass{true, false, true}, {}, known),
                    Catch::Contains("row 4 is in the group of row 3 but its prompt tokens differ"));
  known.prompt_group = {0, 0};
  CHECK_THROWS_WITH(train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 64,
                                             LogprobPass{true, false, true}, {}, known),
                    Catch::Contains("2 group ids for 9 rows"));
}
