// Expert parallelism's rollout (parallel/expert_rollout.h) against one process holding every expert. The runner alone:
// on 2 and 4 Gloo ranks, each with its own rows and 1/E of the experts, every MoE layer's feed-forward equals the
// model's own (its feed_forward method, the exported SparseMoE, over the whole model) within 1e-5 (float32, sums in
// another order): ranks with different row counts, passes cut into chunks, every row routed to one rank's experts
// (the router rewritten), a rank with no row, and a rank that has finished taking part in two more passes of the
// other. The sampler on it: greedy responses of every rank's own prompts identical to one process's, log-probs within
// 1e-5, the ranks making different numbers of sampler calls before the phase ends, no rank ever holding another's
// experts.
#include <catch2/catch.hpp>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "gspo/model/expert_runner.h"
#include "gspo/model/sampling_phase.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/expert_rollout.h"
#include "gspo/parallel/expert_shards.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"
#include "contract_helpers.h"
#include "gspo/core/error.h"
#include "helpers.h"
#include "two_ranks.h"

using namespace gspo;

namespace {

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kFloat) - b.to(torch::kFloat)).abs().max().item<double>();
}

// Every MoE layer's router made to send each row along `v` to the last two experts (the last rank's at E = 2).
void route_to_last(model::Policy& policy, const torch::Tensor& v) {
  torch::NoGradGuard no_grad;
  for (int64_t layer : policy.moe_layers()) {
    auto router = policy.parameter("layers." + std::to_string(layer) + ".mlp.gate.weight");
    const int64_t n = router.size(0);
    for (int64_t e = 0; e < n; ++e) router[e].copy_(v * (e >= n - 2 ? 50.0 + e : -50.0));
  }
}

}  // namespace

TEST_CASE("expert rollout: each MoE layer's feed-forward with the experts on 2 and 4 ranks equals the model's own",
          "[dist][ep]") {
  auto whole = test::load_tiny("qwen3_moe_tiny.pt");
  REQUIRE(whole.has_expert_slots());
  const int64_t H = whole.manifest().hidden_size;
  const auto moe = whole.moe_layers();
  REQUIRE(moe.size() >= 2);
  auto g = at::make_generator<at::CPUGeneratorImpl>(3);
  const auto v = torch::randn({H}, g);
  for (bool adversarial : {false, true}) {
    for (int W : {2, 4}) {
      INFO("W = " << W << (adversarial ? ", every row to the last experts" : ""));
      auto reference = test::load_tiny("qwen3_moe_tiny.pt");
      if (adversarial) route_to_last(reference, v);
      // rank r's passes: rank 0 has none in the first pass, rank 1 has 7 rows (chunks of 3), ...
      std::vector<std::vector<torch::Tensor>> inputs(W);
      for (int r = 0; r < W; ++r)
        for (int64_t rows : {r == 0 ? int64_t{0} : int64_t{2 + 5 * (r % 2)}, int64_t{1 + r}}) {
          auto n = torch::randn({rows, H}, g);
          if (adversarial) n = n * 0.1 + v;  // every row along v: the router's last experts take it
          inputs[r].push_back(n);
        }
      std::vector<std::vector<torch::Tensor>> got(W);
      std::vector<parallel::RolloutExperts::Stats> stats(W);
      const auto errors = test::run_ranks(W, [&](parallel::Comm& world, int rank) {
        auto policy = test::load_tiny("qwen3_moe_tiny.pt");
        if (adversarial) route_to_last(policy, v);
        const auto groups = parallel::open_expert_groups(world, W);
        parallel::ExpertShards shards(policy, *groups.group);
        parallel::RolloutExperts runner(policy, *groups.group, /*chunk_rows=*/3);
        for (const auto& n : inputs[rank]) {
          runner.begin_pass(n.size(0));
          for (int64_t layer : moe) got[rank].push_back(runner.feed_forward(layer, n, nullptr));
        }
        if (rank == 1) {  // two more passes of rank 1 alone: the others take part from finish()
          for (int k = 0; k < 2; ++k) {
            runner.begin_pass(inputs[1][0].size(0));
            for (int64_t layer : moe) got[rank].push_back(runner.feed_forward(layer, inputs[1][0], nullptr));
          }
        }
        runner.finish();
        stats[rank] = runner.stats();
        for (const auto& p : shards.remote())
          if (p.numel() != 0) throw std::runtime_error("a rank holds experts it does not keep");
      });
      for (int r = 0; r < W; ++r) {
        INFO("rank " << r);
        REQUIRE(errors[r] == "");
        size_t i = 0;
        const int passes = r == 1 ? 4 : 2;
        REQUIRE(got[r].size() == static_cast<size_t>(passes) * moe.size());
        for (int p = 0; p < passes; ++p) {
          const auto& n = inputs[r][p < 2 ? p : 0];
          for (int64_t layer : moe) {
            const auto want = reference.feed_forward(layer, n);
            REQUIRE(got[r][i].sizes() == want.sizes());
            if (n.size(0) > 0) CHECK(max_diff(got[r][i], want) < 1e-5);
            ++i;
          }
        }
        CHECK(stats[r].passes == passes);
        CHECK(stats[r].idle_passes == (r == 1 ? 0 : 2));
      }
      if (adversarial) {  // every (row, choice) pair ran on the ranks owning the last two experts, the others ran none
        const int64_t n = whole.parameter("layers." + std::to_string(moe[0]) + ".mlp.gate.weight").size(0);
        const int64_t top_k = whole.moe_routing(moe[0]).first;
        int64_t rows = 0, pairs = 0;
        for (int r = 0; r < W; ++r) {
          rows += stats[r].rows;
          pairs += stats[r].pairs;
          if ((r + 1) * n / W <= n - 2) CHECK(stats[r].pairs == 0);
        }
        CHECK(pairs == rows * top_k * static_cast<int64_t>(moe.size()));
      }
    }
  }
}

TEST_CASE("expert rollout: greedy samples with the experts on 2 and 4 ranks equal one process's, under a KV budget too",
          "[dist][ep][rollout]") {
  auto whole = test::load_tiny("qwen3_moe_tiny.pt");
  auto tok = tokenizer::from_spec(whole.tokenizer_json(), "qwen3_moe_tiny.pt");
  auto greedy = rollout::SamplingParams{0.0, 1.0, 0, 24, {}};
  greedy.record_routes = true;  // (R3: the experts each rank's tokens ran through, as the group routed them)
  const std::vector<std::string> texts{"12+7=", "abc", "Hello, world", "x", "9*9=", "the quick brown fox", "zz", "42"};
  for (int W : {2, 4}) {
    INFO("W = " << W);
    // rank r: even ranks two sampler calls (3 prompts, then 1), odd ranks one of 3 prompts x G 2 in a pool of 2 slots
    // (continuous batching under rollout.kv_cache_mb: rows wait and take finished rows' slots; more passes than the
    // even ranks, which wait for them in finish())
    std::vector<std::vector<std::vector<std::vector<int64_t>>>> calls(W);
    std::vector<rollout::SamplingParams> params(W, greedy);
    for (int r = 0; r < W; ++r) {
      auto prompt = [&](int i) { return tok->encode_prompt(texts[(r + i) % texts.size()]); };
      if (r % 2 == 0) {
        calls[r] = {{prompt(0), prompt(1), prompt(2)}, {prompt(3)}};
      } else {
        calls[r] = {{prompt(0), prompt(5), prompt(6)}};
        int64_t P = 0;
        for (const auto& p : calls[r][0]) P = std::max<int64_t>(P, p.size());
        params[r].kv_cache_bytes = 2 * whole.init_cache(1, P + greedy.max_new_tokens).nbytes();
      }
    }
    auto G = [](int r) { return r % 2 == 0 ? int64_t{1} : int64_t{2}; };
    std::vector<std::vector<rollout::RolloutBatch>> want(W), got(W);
    for (int r = 0; r < W; ++r)
      for (const auto& prompts : calls[r]) {
        rollout::Sampler s(whole, *tok, greedy);  // one process, no budget
        want[r].push_back(s.generate(prompts, G(r), {5, 0}));
      }
    std::vector<parallel::RolloutExperts::Stats> stats(W);
    std::vector<int64_t> slots(W);
    const auto errors = test::run_ranks(W, [&](parallel::Comm& world, int rank) {
      auto policy = test::load_tiny("qwen3_moe_tiny.pt");
      const auto groups = parallel::open_expert_groups(world, W);
      parallel::ExpertShards shards(policy, *groups.group);
      parallel::RolloutExperts runner(policy, *groups.group);
      policy.set_expert_runner(&runner);
      rollout::Sampler s(policy, *tok, params[rank]);
      for (const auto& prompts : calls[rank]) {
        got[rank].push_back(s.generate(prompts, G(rank), {5, 0}));
        slots[rank] = std::max(slots[rank], s.last_stats().slots);
      }
      model::finish_expert_passes(policy);
      stats[rank] = runner.stats();
      policy.set_expert_runner(nullptr);
      for (const auto& p : shards.remote())
        if (p.numel() != 0) throw std::runtime_error("a rank holds experts it does not keep");
      if (shards.whole()) throw std::runtime_error("the experts were gathered");
    });
    int64_t idle = 0;
    for (int r = 0; r < W; ++r) {
      INFO("rank " << r);
      REQUIRE(errors[r] == "");
      REQUIRE(got[r].size() == want[r].size());
      CHECK(stats[r].passes > 0);
      idle += stats[r].idle_passes;
      if (r % 2 == 1) CHECK(slots[r] == 2);  // 6 rows through 2 slots
      for (size_t c = 0; c < want[r].size(); ++c) {
        REQUIRE(got[r][c].num_rows() == want[r][c].num_rows());
        for (int64_t row = 0; row < want[r][c].num_rows(); ++row) {
          INFO("call " << c << ", row " << row);
          CHECK(got[r][c].response_ids[row] == want[r][c].response_ids[row]);
        }
        REQUIRE(got[r][c].behaviour_logprobs.sizes() == want[r][c].behaviour_logprobs.sizes());
        CHECK(max_diff(got[r][c].behaviour_logprobs, want[r][c].behaviour_logprobs) < 1e-5);
        // The group's router on the gathered rows chose each token's experts as the whole model's did (float32;
        // near-ties aside: none in these prompts), in the same order.
        REQUIRE(got[r][c].routes.defined());
        CHECK(torch::equal(got[r][c].routes, want[r][c].routes));
      }
    }
    CHECK(idle > 0);  // some rank waited for another's passes
  }
}

namespace {
struct NoExperts final : model::ExpertRunner {
  void begin_pass(int64_t) override {}
  at::Tensor feed_forward(int64_t, const at::Tensor& n, at::Tensor*) override { return n; }
  void finish() override { ++finished; }
  int finished = 0;
};
}  // namespace

// The end of a sampling phase is a scope (model/sampling_phase.h): finish() once when it closes, none when an exception
// leaves it (no collective while unwinding), none without a runner.
TEST_CASE("expert rollout: a sampling phase ends when its scope closes, not when an exception leaves it", "[ep][model]") {
  NoExperts runner;
  auto tiny = test::load_tiny("qwen3_moe_tiny.pt");
  tiny.set_expert_runner(&runner);
  { model::SamplingPhase phase(tiny); }
  CHECK(runner.finished == 1);
  try {
    model::SamplingPhase phase(tiny);
    throw std::runtime_error("a failed sampling call");
  } catch (const std::runtime_error&) {
  }
  CHECK(runner.finished == 1);
  {
    std::optional<model::SamplingPhase> phase;
    phase.emplace(tiny);
    phase.reset();
    CHECK(runner.finished == 2);
  }
  tiny.set_expert_runner(nullptr);
  { model::SamplingPhase phase(tiny); }  // no runner: nothing to end
  CHECK(runner.finished == 2);
}

TEST_CASE("expert rollout: the contract check runs the slot passes one layer at a time, and older exports cannot sample "
          "with shared experts", "[ep][model]") {
  // feed_forward that drops the experts: the whole slot methods are right, the passes one layer at a time are not
  test::check_contract_rejects("broken_feed_forward.pt", "run one layer at a time");
  NoExperts none;
  auto old = test::load_tiny("ep_api1.pt");  // an MoE export of ep_api 1: trains with expert parallelism
  CHECK(old.has_expert_parallel());
  CHECK_FALSE(old.has_expert_slots());
  CHECK_THROWS_AS(old.set_expert_runner(&none), ModelContractError);
  CHECK_THROWS_AS(test::load_tiny("tiny_without_layers.pt").set_expert_runner(&none), ModelContractError);
  auto tiny = test::load_tiny("qwen3_moe_tiny.pt");
  REQUIRE(tiny.has_expert_slots());
  tiny.set_expert_runner(&none);
  CHECK(tiny.expert_runner() == &none);
  tiny.set_expert_runner(nullptr);
  CHECK(tiny.expert_runner() == nullptr);
}
