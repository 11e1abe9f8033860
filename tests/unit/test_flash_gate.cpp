// #65 item 11, the part a CPU can show: exports carry the `flash_ok` switch that model/policy.cpp's gate_flash turns off
// on a GPU older than sm80 (FlashAttention-2's minimum), where the bf16 slot passes then attend through masked SDPA;
// off the GPU it stays as exported and changes nothing. (The GPU halves: tests/cuda/test_cuda.cpp "flash_ok off".)
#include <catch2/catch.hpp>
#include <torch/script.h>

#include "gspo/core/resources.h"
#include "gspo/model/manifest.h"
#include "helpers.h"

using namespace gspo;

TEST_CASE("exports carry the flash_ok switch, on by default, which a CPU load leaves alone", "[model][varlen]") {
  for (const char* name : {"tiny.pt", "tiny_qwen3.pt"}) {
    INFO(name);
    std::unordered_map<std::string, std::string> extra{{model::kManifestFile, ""}, {model::kTokenizerFile, ""}};
    auto m = torch::jit::load(test::model_path(name), torch::kCPU, extra);
    REQUIRE(m.hasattr("flash_ok"));
    CHECK(m.attr("flash_ok").toBool());
  }
  CHECK(core::cuda_capability_major(c10::Device(c10::kCPU)) == 0);  // the gate never fires off a GPU
  CHECK_NOTHROW(test::load_tiny());
}

// #65 item 11: q/k norms kept in float32 beside bf16 projections (RMSNorm's weight * y promotes) sent float32 queries
// and keys beside bf16 values: the CPU's masked SDPA refused the mixed dtypes, as the flash kernel did on a GPU.
// Attention now computes in the projections' dtype: the logits equal the all-bf16 model's within bf16 rounding.
TEST_CASE("q/k norms in float32 beside bf16 projections: attention runs in the projections' dtype", "[model][varlen]") {
  auto all16 = test::load_tiny("tiny_qwen3.pt");
  auto mixed = test::load_tiny("tiny_qwen3.pt");
  all16.set_param_dtype(torch::kBFloat16);
  mixed.set_param_dtype(torch::kBFloat16);
  int64_t norms = 0;
  for (const auto& [name, p] : mixed.named_parameters())
    if (name.find("q_norm") != std::string::npos || name.find("k_norm") != std::string::npos) {
      mixed.parameter(name).set_data(p.detach().to(torch::kFloat));
      ++norms;
    }
  REQUIRE(norms > 0);
  auto ids = torch::randint(3, 200, {2, 9});
  auto mask = torch::ones({2, 9}, torch::kLong);
  torch::NoGradGuard g;
  const auto a = all16.logits(ids, mask).to(torch::kFloat);
  const auto b = mixed.logits(ids, mask).to(torch::kFloat);  // threw before: float32 queries, bf16 values
  CHECK((a - b).abs().max().item<double>() <= 5e-2 * std::max(1.0, a.abs().max().item<double>()));
}
