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
