// The model layer: TorchScript loading against an eager-PyTorch golden, KV-cache parity, contract checks.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>

#include "gspo/core/error.h"
#include "contract_helpers.h"
#include "helpers.h"

using namespace gspo;

TEST_CASE("forward logits match eager PyTorch on a left-padded batch (tol 1e-4)", "[model]") {
  auto policy = test::load_tiny();
  std::ifstream in(test::model_path("tiny_forward_golden.json"));
  REQUIRE(in);
  auto j = nlohmann::json::parse(in);
  auto ids = torch::tensor(j["ids"].get<std::vector<std::vector<int64_t>>>()[0]).view({1, -1});
  auto ids2 = torch::tensor(j["ids"].get<std::vector<std::vector<int64_t>>>()[1]).view({1, -1});
  auto m = j["mask"].get<std::vector<std::vector<int64_t>>>();
  auto all_ids = torch::cat({ids, ids2});
  auto mask = torch::cat({torch::tensor(m[0]).view({1, -1}), torch::tensor(m[1]).view({1, -1})});
  auto golden = torch::tensor(j["logits"].get<std::vector<float>>()).view({2, 8, -1});
  torch::NoGradGuard g;
  auto logits = policy.logits(all_ids, mask);
  REQUIRE(logits.sizes() == golden.sizes());
  // Row 0's first two columns are padding (unspecified output); compare real positions only.
  auto diff0 = (logits[0].narrow(0, 2, 6) - golden[0].narrow(0, 2, 6)).abs().max().item<double>();
  auto diff1 = (logits[1] - golden[1]).abs().max().item<double>();
  CHECK(diff0 < 1e-4);
  CHECK(diff1 < 1e-4);
}

TEST_CASE("logits_from equals the eager golden's columns from `first` on (tol 1e-4), and gradients flow", "[model]") {
  auto policy = test::load_tiny();
  REQUIRE(policy.has_logits_from());
  std::ifstream in(test::model_path("tiny_forward_golden.json"));
  REQUIRE(in);
  auto j = nlohmann::json::parse(in);
  std::vector<torch::Tensor> ids, mask;
  for (int r = 0; r < 2; ++r) {
    ids.push_back(torch::tensor(j["ids"][r].get<std::vector<int64_t>>()).view({1, -1}));
    mask.push_back(torch::tensor(j["mask"][r].get<std::vector<int64_t>>()).view({1, -1}));
  }
  auto all_ids = torch::cat(ids), all_mask = torch::cat(mask);
  auto golden = torch::tensor(j["logits"].get<std::vector<float>>()).view({2, 8, -1});
  for (int64_t first : {2, 5, 7}) {
    INFO("first " << first);
    torch::NoGradGuard g;
    auto tail = policy.logits_from(all_ids, all_mask, first);
    REQUIRE(tail.sizes() == torch::IntArrayRef({2, 8 - first, golden.size(2)}));
    // Every compared column is a real token (row 0 is padded in columns 0-1 only).
    CHECK((tail - golden.narrow(1, first, 8 - first)).abs().max().item<double>() < 1e-4);
  }
  // Training differentiates through it: the same parameters get gradients as through forward (the tiny model's
  // unused q/k norm weights get none either way), and the gradients equal those of forward's kept columns.
  auto params = policy.parameters();
  auto grads = [&](bool tail_only) {
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    auto out = tail_only ? policy.logits_from(all_ids, all_mask, 5) : policy.logits(all_ids, all_mask).narrow(1, 5, 3);
    (out * out).sum().backward();
    std::vector<torch::Tensor> g;
    for (auto& p : params) g.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
    return g;
  };
  auto via_tail = grads(true), via_full = grads(false);
  int64_t with_grad = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    REQUIRE(via_tail[i].defined() == via_full[i].defined());
    if (!via_tail[i].defined()) continue;
    ++with_grad;
    CHECK((via_tail[i] - via_full[i]).abs().max().item<double>() <= 1e-4 * (1 + via_full[i].abs().max().item<double>()));
  }
  CHECK(with_grad >= static_cast<int64_t>(params.size()) - 4);  // all but 2 layers' q_norm and k_norm
}

TEST_CASE("KV-cache prefill + decode reproduces the full forward (tol 1e-4)", "[model][kv]") {
  for (const char* name : {"tiny.pt", "tiny_qwen3.pt"}) {
    INFO(name);
    auto policy = test::load_tiny(name);
    torch::NoGradGuard g;
    torch::manual_seed(7);
    const int64_t B = 3, T = 12, P = 5;
    auto ids = torch::randint(0, 256, {B, T}, torch::kLong);
    auto mask = torch::ones({B, T}, torch::kLong);
    mask.index_put_({1, torch::indexing::Slice(0, 3)}, 0);  // left padding of different lengths
    mask.index_put_({2, torch::indexing::Slice(0, 1)}, 0);
    auto full = policy.logits(ids, mask);
    auto cache = policy.init_cache(B, T);
    auto first = policy.prefill(ids.narrow(1, 0, P), mask.narrow(1, 0, P), cache);
    double worst = (first - full.select(1, P - 1)).abs().max().item<double>();
    for (int64_t s = P; s < T; ++s) {
      auto step = policy.decode(ids.narrow(1, s, 1), mask.narrow(1, 0, s + 1), cache, s);
      worst = std::max(worst, (step - full.select(1, s)).abs().max().item<double>());
    }
    CHECK(worst < 1e-4);
  }
}

TEST_CASE("reorder_cache keeps each row's history", "[model][kv]") {
  auto policy = test::load_tiny();
  torch::NoGradGuard g;
  torch::manual_seed(3);
  auto ids = torch::randint(0, 256, {3, 6}, torch::kLong);
  auto mask = torch::ones({3, 6}, torch::kLong);
  auto full = policy.logits(ids, mask);
  auto cache = policy.init_cache(3, 6);
  policy.prefill(ids.narrow(1, 0, 5), mask.narrow(1, 0, 5), cache);
  auto rows = torch::tensor({2, 0}, torch::kLong);
  auto sub = policy.reorder_cache(cache, rows);
  auto step = policy.decode(ids.index_select(0, rows).narrow(1, 5, 1), mask.narrow(0, 0, 2), sub, 5);
  CHECK((step - full.index_select(0, rows).select(1, 5)).abs().max().item<double>() < 1e-4);
}

TEST_CASE("inspect's contract check rejects each kind of broken model with a precise message", "[model][contract]") {
  auto ok = test::load_tiny();
  CHECK(model::check_contract(ok) < 1e-4);

  const auto rejects = test::check_contract_rejects;
  rejects("not_torchscript.pt", "is not a loadable TorchScript file");
  rejects("broken_no_decode.pt", "lacks the contract method 'decode'");
  rejects("broken_no_manifest.pt", "no gspo_manifest.json inside");
  rejects("broken_manifest_field.pt", "lacks required field 'eos_token_id'");
  rejects("broken_wrong_shape.pt", "returned shape [2, 8, 10], the contract needs [2, 8, 259]");
  rejects("broken_bad_cache.pt", "KV-cache decode disagrees with forward");
  CHECK_THROWS_AS(model::Policy::load(test::model_path("does_not_exist.pt")), IoError);
}

TEST_CASE("a saved policy reloads with the same weights, manifest and tokenizer", "[model]") {
  auto policy = test::load_tiny();
  const std::string out = std::string(GSPO_TEST_MODELS) + "/resaved_tmp.pt";
  policy.save(out);
  auto again = model::Policy::load(out);
  CHECK(again.manifest().vocab_size == policy.manifest().vocab_size);
  CHECK(again.tokenizer_json() == policy.tokenizer_json());
  auto a = policy.parameters(), b = again.parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(torch::equal(a[i], b[i]));  // saving copies bytes: bitwise
  std::remove(out.c_str());
}

TEST_CASE("MoE models report per-layer expert load: dense models report none", "[model][moe]") {
  auto moe = test::load_tiny("qwen3_moe_tiny.pt");
  torch::NoGradGuard g;
  auto ids = torch::randint(0, 256, {3, 7}, torch::kLong);
  moe.logits(ids, torch::ones_like(ids));
  auto load = moe.expert_load();
  REQUIRE(load.size() == 3);          // layers 0 and 2 are MoE, layer 1 dense (mlp_only_layers)
  CHECK(load[1].numel() == 0);
  for (size_t i : {0u, 2u}) {
    CHECK(load[i].numel() == 4);
    CHECK(load[i].sum().item<double>() == Approx(1.0));
    CHECK(load[i].min().item<double>() >= 0.0);
  }
  auto dense = test::load_tiny();
  dense.logits(ids, torch::ones_like(ids));
  for (const auto& t : dense.expert_load()) CHECK(t.numel() == 0);
}
