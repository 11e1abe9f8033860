// The optional contract method decode_static (what rollout.cuda_graphs replays on a GPU), checked on the CPU against
// the eager decode: same cache contents, logits within float rounding. The graph capture itself needs a GPU
// (tests/cuda).
#include <catch2/catch.hpp>

#include <limits>

#include "gspo/model/manifest.h"
#include "gspo/rollout/sampler.h"
#include "helpers.h"

using namespace gspo;

TEST_CASE("decode_static equals decode step by step on a left-padded batch (tol 1e-5)", "[model][kv]") {
  for (const char* name : {"tiny.pt", "tiny_qwen3.pt"}) {
    INFO(name);
    auto policy = test::load_tiny(name);
    REQUIRE(policy.has_static_decode());
    torch::NoGradGuard g;
    torch::manual_seed(11);
    const int64_t B = 3, T = 12, P = 5, S = 16;
    auto ids = torch::randint(3, 250, {B, T}, torch::kLong);
    auto mask = torch::ones({B, T}, torch::kLong);
    mask[1].narrow(0, 0, 2).zero_();  // left padding
    mask[2][9] = 0;                   // a finished row's dead column
    auto eager = policy.init_cache(B, S), fixed = policy.init_cache(B, S);
    policy.prefill(ids.narrow(1, 0, P), mask.narrow(1, 0, P), eager);
    policy.prefill(ids.narrow(1, 0, P), mask.narrow(1, 0, P), fixed);
    auto full = torch::zeros({B, S}, torch::kLong);  // every cache column; 0 past the current one
    full.narrow(1, 0, P).copy_(mask.narrow(1, 0, P));
    double worst = 0;
    for (int64_t t = P; t < T; ++t) {
      full.select(1, t).copy_(mask.select(1, t));
      auto a = policy.decode(ids.narrow(1, t, 1), mask.narrow(1, 0, t + 1), eager, t);
      auto b = policy.decode_static(ids.narrow(1, t, 1), full, fixed, torch::tensor({t}));
      REQUIRE(a.sizes() == b.sizes());
      // Rows whose current column is padding have unspecified logits (contract): compare live rows only.
      for (int64_t r = 0; r < B; ++r)
        if (mask[r][t].item<int64_t>() == 1) worst = std::max(worst, (a[r] - b[r]).abs().max().item<double>());
    }
    // Attention over all S columns (masked) instead of the first t + 1 sums the same terms plus exact zeros.
    CHECK(worst < 1e-5);
    // The reference cache is sequence-major ([layers, 2, rows, columns, kv_heads, head_dim], slot_api 3): columns [0, T).
    CHECK((eager.narrow(3, 0, T) - fixed.narrow(3, 0, T)).abs().max().item<double>() < 1e-5);
  }
}

// #70 item 4: which decode steps rollout.cuda_graphs auto captures. A dense model's, any size; an MoE export's when its
// manifest says its routing reads nothing back to the host in passes up to moe_capture_rows rows (scripts/
// gspo_model.py's SparseMoE.dense, checked against the routed path by tests/hf_export/test_moe_capturable.py); an
// older MoE export's (no such field), none. The captures themselves: tests/cuda/test_cuda.cpp on a GPU.
TEST_CASE("the decode steps a CUDA graph may capture: any for dense models, MoE exports' up to moe_capture_rows",
          "[model][rollout]") {
  CHECK(rollout::Sampler::capture_rows(test::load_tiny("tiny.pt")) == std::numeric_limits<int64_t>::max());
  const auto moe = test::load_tiny("qwen3_moe_tiny.pt");
  CHECK(moe.manifest().moe_capture_rows == 256);
  CHECK(rollout::Sampler::capture_rows(moe) == 256);
  CHECK(rollout::Sampler::capture_rows(test::load_tiny("moe_route_api1.pt")) == 0);
  // The field is the manifest's: a bad one is refused at load, naming it.
  const std::string head = R"({"contract_version": 1, "vocab_size": 300, "max_seq_len": 64, "eos_token_id": 5)";
  CHECK(model::parse_manifest(head + "}", "m.pt").moe_capture_rows == 0);
  CHECK_THROWS_WITH(model::parse_manifest(head + R"(, "moe_capture_rows": -1})", "m.pt"),
                    Catch::Contains("moe_capture_rows must be >= 0"));
  CHECK_THROWS_WITH(model::parse_manifest(head + R"(, "moe_capture_rows": "many"})", "m.pt"),
                    Catch::Contains("moe_capture_rows"));
}
