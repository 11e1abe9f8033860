// Low-rank adapters merged into each decoder layer as it runs (model/lora.h). Gradients of every A and B against
// tests/golden/lora_reference.py (autograd through an explicit W + (alpha / r) B A set into the TorchScript model, the
// loss through its own full-sequence logits; gspo runs the per-layer methods, with and without activation
// checkpointing). The two forwards differ in float32 summation order only: gradients agree to 1e-5 of their norm, the
// loss to 1e-5 relative. Start-up equality with B = 0 is bitwise (the same per-layer code path, identical weights).
#include <catch2/catch.hpp>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "gspo/core/error.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/train/logprobs.h"
#include "helpers.h"

using namespace gspo;
using nlohmann::json;

namespace {

torch::Tensor tensor_of(const json& values, const json& shape, torch::ScalarType t = torch::kFloat) {
  std::vector<double> v = values.get<std::vector<double>>();
  return torch::tensor(v, torch::kDouble).reshape(shape.get<std::vector<int64_t>>()).to(t);
}

// The per-layer forward gspo trains through: embed, every decoder layer (gated), final norm, head.
torch::Tensor layered_logits(model::Policy& p, const torch::Tensor& ids, const torch::Tensor& mask, bool checkpoint) {
  auto x = p.embed(ids);
  const auto ctx = p.layer_context(mask);
  for (int64_t i = 0; i < p.num_layers(); ++i) x = p.layer(i, x, ctx, checkpoint);
  auto logits = torch::matmul(p.final_norm(x), p.head_weight().t());
  if (p.head_bias().defined()) logits = logits + p.head_bias();
  return logits.to(torch::kFloat);
}

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).norm().item<double>() / std::max(want.norm().item<double>(), 1e-12);
}

}  // namespace

TEST_CASE("LoRA: adapter gradients through the merged layers equal autograd through W + (alpha / r) B A",
          "[lora]") {
  std::ifstream in(test::model_path("lora_cases.json"));
  REQUIRE(in.good());
  for (const auto& c : json::parse(in)) {
    INFO("model " << c["model"].get<std::string>());
    auto policy = test::load_tiny(c["model"].get<std::string>());
    model::LoraSpec spec;
    spec.rank = c["rank"];
    spec.alpha = c["alpha"];
    spec.experts = c["experts"];
    model::LoraAdapters lora(policy, spec);
    const auto& golden = c["adapters"];
    REQUIRE(lora.adapters().size() == golden.size());
    {
      torch::NoGradGuard g;
      for (size_t i = 0; i < golden.size(); ++i) {
        CHECK(lora.adapters()[i].name == golden[i]["name"].get<std::string>());
        lora.adapters()[i].A.copy_(tensor_of(golden[i]["a"], golden[i]["a_shape"]));
        lora.adapters()[i].B.copy_(tensor_of(golden[i]["b"], golden[i]["b_shape"]));
      }
    }
    if (spec.experts) {
      int64_t in_experts = 0;
      for (const auto& a : lora.adapters()) in_experts += a.name.find(".experts.") != std::string::npos;
      CHECK(in_experts > 0);
    }
    for (const auto& a : lora.adapters()) CHECK(a.name.find("mlp.gate.weight") == std::string::npos);  // a router
    auto ids = torch::tensor(c["ids"].get<std::vector<std::vector<int64_t>>>()[0], torch::kLong).unsqueeze(0);
    ids = torch::cat({ids, torch::tensor(c["ids"][1].get<std::vector<int64_t>>(), torch::kLong).unsqueeze(0)});
    auto mask = torch::cat({torch::tensor(c["mask"][0].get<std::vector<int64_t>>(), torch::kLong).unsqueeze(0),
                            torch::tensor(c["mask"][1].get<std::vector<int64_t>>(), torch::kLong).unsqueeze(0)});
    const auto r = tensor_of(c["r"], c["r_shape"]);
    const auto before = policy.named_parameters();
    policy.add_gate(&lora);
    for (bool checkpoint : {false, true}) {
      INFO("activation checkpointing " << checkpoint);
      for (auto t : lora.parameters()) t.mutable_grad() = torch::Tensor();
      auto logits = layered_logits(policy, ids, mask, checkpoint);
      auto loss = (logits * r * mask.unsqueeze(-1).to(torch::kFloat)).sum();
      CHECK(loss.item<double>() == Approx(c["loss"].get<double>()).epsilon(1e-5));
      loss.backward();
      for (size_t i = 0; i < golden.size(); ++i) {
        INFO("adapter " << golden[i]["name"].get<std::string>());
        const auto& a = lora.adapters()[i];
        REQUIRE(a.A.grad().defined());
        REQUIRE(a.B.grad().defined());
        CHECK(rel_err(a.A.grad(), tensor_of(golden[i]["grad_a"], golden[i]["a_shape"])) < 1e-5);
        CHECK(rel_err(a.B.grad(), tensor_of(golden[i]["grad_b"], golden[i]["b_shape"])) < 1e-5);
      }
    }
    policy.remove_gate(&lora);
    // The base weights are back, the very tensors, untouched and without gradients.
    const auto after = policy.named_parameters();
    REQUIRE(after.size() == before.size());
    for (size_t i = 0; i < after.size(); ++i) {
      CHECK(after[i].second.unsafeGetTensorImpl() == before[i].second.unsafeGetTensorImpl());
      CHECK_FALSE(after[i].second.grad().defined());
    }
  }
}

TEST_CASE("LoRA: with B = 0 the adapted model is the base model bit for bit, and a merged copy samples the adapted one",
          "[lora]") {
  auto policy = test::load_tiny("tiny.pt");
  auto ids = torch::tensor({{3, 9, 27, 81, 5, 15}}, torch::kLong);
  auto mask = torch::ones_like(ids);
  torch::Tensor base;
  {
    torch::NoGradGuard g;
    base = layered_logits(policy, ids, mask, false);
  }
  model::LoraAdapters lora(policy, {});
  for (const auto& a : lora.adapters()) CHECK(a.B.abs().max().item<double>() == 0.0);  // B = 0, as PEFT
  policy.add_gate(&lora);
  {
    torch::NoGradGuard g;
    CHECK(layered_logits(policy, ids, mask, false).equal(base));
    // The whole-model methods would read the base without its adapters: they refuse while the gate is added.
    CHECK_THROWS_AS(policy.logits(ids, mask), Error);
    for (auto& a : lora.adapters()) a.B.normal_(0.0, 0.05);  // a trained adapter
  }
  torch::Tensor adapted;
  {
    torch::NoGradGuard g;
    adapted = layered_logits(policy, ids, mask, false);
  }
  CHECK_FALSE(adapted.equal(base));
  auto copy = test::load_tiny("tiny.pt");
  lora.merge_into(copy);
  torch::NoGradGuard g;
  CHECK(rel_err(copy.logits(ids, mask).to(torch::kFloat), adapted) < 1e-5);
  policy.remove_gate(&lora);
}

TEST_CASE("LoRA: targets that match no weight, and rank 0, are config errors", "[lora]") {
  auto policy = test::load_tiny("tiny.pt");
  model::LoraSpec spec;
  spec.targets = {"qkv"};
  CHECK_THROWS_WITH(model::LoraAdapters(policy, spec), Catch::Contains("model.lora_targets [qkv] match no"));
  spec = {};
  spec.rank = 0;
  CHECK_THROWS_AS(model::LoraAdapters(policy, spec), ConfigError);
  auto flat = test::load_tiny("tiny_without_layers.pt");
  CHECK_THROWS_WITH(model::LoraAdapters(flat, {}), Catch::Contains("no per-layer methods"));
}

TEST_CASE("LoRA: adapter gradients through the chunked head equal those through whole logits, and the frozen head gets none",
          "[lora]") {
  // The per-layer pass the trainer runs (train/logprobs.h), the head chunk by chunk (a custom backward that skips the
  // frozen head's weight gradient) against [N, V] logits through autograd; with and without checkpointing.
  for (const char* file : {"tiny.pt", "qwen3_moe_tiny.pt"}) {
    INFO(file);
    auto policy = test::load_tiny(file);
    model::LoraSpec spec;
    spec.rank = 2;
    spec.experts = true;
    model::LoraAdapters lora(policy, spec);
    {
      torch::NoGradGuard g;
      for (auto& a : lora.adapters()) a.B.normal_(0.0, 0.05);  // B = 0 would leave A's gradient 0
    }
    policy.add_gate(&lora);
    torch::manual_seed(3);
    const auto V = policy.manifest().vocab_size;
    auto ids = torch::randint(3, V, {2, 9}, torch::kLong);
    auto mask = torch::ones({2, 9}, torch::kLong);
    mask[1][0] = 0, mask[1][8] = 0;  // a left-padded prompt, a shorter response
    const auto weights = torch::rand({2, 5});
    auto grads = [&](bool chunked, bool checkpoint) {
      for (auto t : lora.parameters()) t.mutable_grad() = torch::Tensor();
      train::LogprobPass pass{true, checkpoint, chunked};
      auto lp = train::response_logprobs(policy, ids, mask, 4, 0.7, train::Entropy::kSkip, 3, pass);
      (lp.logprobs * weights * mask.narrow(1, 4, 5)).sum().backward();
      std::vector<torch::Tensor> g;
      for (const auto& t : lora.parameters()) g.push_back(t.grad().clone());
      return g;
    };
    const auto want = grads(false, false);
    for (bool checkpoint : {false, true}) {
      const auto got = grads(true, checkpoint);
      double worst = 0, norm = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, (got[i] - want[i]).abs().max().item<double>());
        norm = std::max(norm, want[i].abs().max().item<double>());
      }
      INFO("checkpoint " << checkpoint << ": max |difference| " << worst << " of max |gradient| " << norm);
      CHECK(norm > 0);
      CHECK(worst <= 1e-5 * norm);
    }
    CHECK_FALSE(policy.head_weight().grad().defined());
    policy.remove_gate(&lora);
  }
}

TEST_CASE("LoRA: with a bf16 base the adapters stay float32 and their gradients follow the float32 base's", "[lora]") {
  // model.dtype bfloat16 with adapters: the base cast to bf16, W' = W + s B A rounded to bf16 in the forward. The
  // gradients of A and B are float32 and equal the float32 base's up to bf16 rounding of the weights and activations
  // (8 significant bits): within 3e-2 of their norm over a 2-layer model.
  auto run = [](c10::ScalarType dtype) {
    auto policy = test::load_tiny("tiny.pt");
    model::LoraSpec spec;
    spec.rank = 4;
    model::LoraAdapters lora(policy, spec);
    policy.set_param_dtype(dtype);
    {
      torch::NoGradGuard g;
      for (auto& a : lora.adapters()) a.B.normal_(0.0, 0.05, at::make_generator<at::CPUGeneratorImpl>(7));
    }
    policy.add_gate(&lora);
    torch::manual_seed(5);
    auto ids = torch::randint(3, policy.manifest().vocab_size, {2, 10}, torch::kLong);
    auto mask = torch::ones({2, 10}, torch::kLong);
    auto lp = train::response_logprobs(policy, ids, mask, 4, 1.0, train::Entropy::kSkip, 4, {true, true, true});
    lp.logprobs.sum().backward();
    std::vector<torch::Tensor> g;
    for (const auto& t : lora.parameters()) {
      CHECK(t.scalar_type() == torch::kFloat);
      g.push_back(t.grad().clone());
    }
    policy.remove_gate(&lora);
    return g;
  };
  const auto f32 = run(torch::kFloat), b16 = run(torch::kBFloat16);
  double num = 0, den = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    num += (b16[i] - f32[i]).square().sum().item<double>();
    den += f32[i].square().sum().item<double>();
  }
  INFO("relative difference " << std::sqrt(num / den));
  CHECK(den > 0);
  CHECK(std::sqrt(num / den) < 3e-2);
}

TEST_CASE("LoRA: a sampling copy shares every untargeted tensor with the base, a tied head too, and samples the adapted "
          "model", "[lora]") {
  for (const char* file : {"tiny_qwen3.pt", "tiny.pt"}) {  // tied and untied embeddings
    INFO(file);
    auto policy = test::load_tiny(file);
    model::LoraSpec spec;
    spec.rank = 2;
    model::LoraAdapters lora(policy, spec);
    {
      torch::NoGradGuard g;
      for (auto& a : lora.adapters()) a.B.normal_(0.0, 0.05);
    }
    auto copy = test::load_tiny(file);
    const int64_t shared = lora.share_untargeted(copy);
    int64_t targeted = 0;
    for (const auto& a : lora.adapters()) targeted += policy.parameter(a.name).numel();
    CHECK(shared + targeted == policy.num_parameters());
    CHECK(copy.head_weight().unsafeGetTensorImpl() == policy.head_weight().unsafeGetTensorImpl());
    for (const auto& [name, w] : policy.named_parameters()) {
      const bool adapted = std::any_of(lora.adapters().begin(), lora.adapters().end(),
                                       [&](const auto& a) { return a.name == name; });
      CHECK((copy.parameter(name).unsafeGetTensorImpl() == w.unsafeGetTensorImpl()) != adapted);
    }
    lora.merge_into(copy);
    policy.add_gate(&lora);
    auto ids = torch::randint(3, policy.manifest().vocab_size, {2, 7}, torch::kLong);
    auto mask = torch::ones({2, 7}, torch::kLong);
    torch::NoGradGuard g;
    CHECK(rel_err(copy.logits(ids, mask).to(torch::kFloat), layered_logits(policy, ids, mask, false)) < 1e-5);
    policy.remove_gate(&lora);
  }
}
