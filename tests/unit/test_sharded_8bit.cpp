// 8-bit moments under the sharded optimizers (parallel/shard_moments.h; optimizer.state_bits 8 with
// distributed.zero_stage 1, which expert parallelism's two ShardedAdamW use too): ZeRO-1 over 2 and 3 Gloo ranks takes
// bitsandbytes' 8-bit steps of one process over the same flat vector (adamw8bit_step, the reference
// tests/unit/test_adamw8bit.cpp checks against bitsandbytes) bit for bit: the shards are whole 256-element blocks, so
// every block is quantised as in one process. The gradients are multiples of 1/64 so that their sum over the ranks
// is exact in any order (bitwise is then the right bar). A resume re-cuts the gathered codes and absmax at 1 and 3
// ranks exactly: the next steps equal the uninterrupted run's bit for bit.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/parallel/adamw8bit.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/sharded_adamw.h"
#include "two_ranks.h"

using namespace gspo;

namespace {

// 2000 + 3000 + 7 + 300 = 5307 elements: 21 blocks, the last short; shards of 2816 (2 ranks) and 1792 (3 ranks) cut
// the 3000-element tensor and leave padding in the last shard.
const std::vector<std::vector<int64_t>> kShapes{{40, 50}, {3000}, {7}, {300}};
const parallel::AdamWHyper kHyper{0.9, 0.95, 1e-8, 0.1, 8};
constexpr double kLr = 1e-2;

std::vector<torch::Tensor> initial() {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(5);
  std::vector<torch::Tensor> out;
  for (const auto& s : kShapes) out.push_back(torch::randn(s, gen));
  return out;
}

// grads[step][rank][param]: multiples of 1/64 in [-1, 1] (sums exact in float32 whatever the order).
std::vector<std::vector<std::vector<torch::Tensor>>> gradients(int steps, int ranks) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  std::vector<std::vector<std::vector<torch::Tensor>>> g(steps, std::vector<std::vector<torch::Tensor>>(ranks));
  for (auto& step : g)
    for (auto& rank : step)
      for (const auto& s : kShapes) rank.push_back(torch::randint(-64, 65, s, gen, torch::kFloat) / 64);
  return g;
}

torch::Tensor flat(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> parts;
  for (const auto& t : ts) parts.push_back(t.reshape({-1}));
  return torch::cat(parts);
}

// One process: adamw8bit_step over the flat vector, the gradient the sum over the ranks; steps [from, to).
void reference_steps(torch::Tensor& p, parallel::Moments8bit& s, const decltype(gradients(0, 0))& g, int from,
                     int to) {
  const auto maps = parallel::Maps8bit::make(c10::kCPU);
  for (int t = from; t < to; ++t) {
    auto sum = flat(g[t][0]);
    for (size_t r = 1; r < g[t].size(); ++r) sum = sum + flat(g[t][r]);
    parallel::adamw8bit_step(p, sum, s, maps, kLr, t + 1, kHyper);
  }
}

// Steps [from, to) of ZeRO-1 8-bit on this rank's params with its gradients g[t][rank].
void sharded_steps(parallel::ShardedAdamW& opt, std::vector<torch::Tensor>& params, const decltype(gradients(0, 0))& g,
                   int rank, int from, int to) {
  for (int t = from; t < to; ++t) {
    for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = g[t][rank][i].clone();
    opt.reduce_gradients();
    opt.step(kLr, 1.0);
  }
}

std::vector<torch::Tensor> clones(const std::vector<torch::Tensor>& ts) {
  std::vector<torch::Tensor> out;
  for (const auto& t : ts) out.push_back(t.clone());
  return out;
}

}  // namespace

TEST_CASE("ZeRO-1 with 8-bit moments on 2 and 3 ranks takes one process's 8-bit AdamW steps bit for bit",
          "[dist][optim][adamw8bit][zero8bit]") {
  for (int W : {2, 3}) {
    INFO(W << " ranks");
    const auto init = initial();
    const auto g = gradients(3, W);
    auto ref = flat(init).clone();
    auto s = parallel::Moments8bit::zeros(ref.numel(), ref.options());
    reference_steps(ref, s, g, 0, 3);
    std::vector<std::vector<torch::Tensor>> params(W);
    std::vector<torch::Tensor> state;
    std::vector<int64_t> shard(W), bytes(W);
    const auto errors = test::run_ranks(W, [&](parallel::Comm& comm, int rank) {
      params[rank] = clones(init);
      parallel::ShardedAdamW opt(params[rank], kHyper, comm);
      shard[rank] = opt.shard_numel();
      bytes[rank] = opt.state_bytes();
      sharded_steps(opt, params[rank], g, rank, 0, 3);
      auto st = opt.gather_state();
      if (rank == 0) state = st;
    });
    for (int r = 0; r < W; ++r) REQUIRE(errors[r] == "");
    CHECK(shard[0] % parallel::kQuantBlock == 0);
    CHECK(shard[0] * W >= 5307);
    CHECK(bytes[0] == 2 * shard[0] + 2 * 4 * (shard[0] / 256));  // codes + absmax of both moments
    for (int r = 0; r < W; ++r) CHECK(torch::equal(flat(params[r]), ref));
    REQUIRE(state.size() == 5);
    CHECK(state[0].item<int64_t>() == 3);
    CHECK(torch::equal(state[1], s.m_codes));
    CHECK(torch::equal(state[2], s.m_absmax));
    CHECK(torch::equal(state[3], s.v_codes));
    CHECK(torch::equal(state[4], s.v_absmax));
  }
}

TEST_CASE("ZeRO-1 8-bit moments saved at 2 ranks resume at 1 and 3 ranks: the continuation is the uninterrupted run's "
          "bit for bit", "[dist][optim][adamw8bit][zero8bit]") {
  const auto init = initial();
  const auto g2 = gradients(4, 2);
  // the gradients of the continuation, summed: 1 rank takes the sum, 3 ranks take it split as (sum, 0, 0)
  std::vector<std::vector<std::vector<torch::Tensor>>> g1(4, std::vector<std::vector<torch::Tensor>>(1)), g3(4);
  for (int t = 0; t < 4; ++t) {
    for (size_t i = 0; i < kShapes.size(); ++i) g1[t][0].push_back(g2[t][0][i] + g2[t][1][i]);
    g3[t] = {g1[t][0], {}, {}};
    for (size_t i = 0; i < kShapes.size(); ++i) {
      g3[t][1].push_back(torch::zeros(kShapes[i]));
      g3[t][2].push_back(torch::zeros(kShapes[i]));
    }
  }
  std::vector<torch::Tensor> at2, straight, state;
  auto errors = test::run_ranks(2, [&](parallel::Comm& comm, int rank) {
    auto params = clones(init);
    parallel::ShardedAdamW opt(params, kHyper, comm);
    sharded_steps(opt, params, g2, rank, 0, 2);
    auto st = opt.gather_state();
    if (rank == 0) {
      state = st;
      at2 = clones(params);
    }
    sharded_steps(opt, params, g2, rank, 2, 4);
    if (rank == 0) straight = clones(params);
  });
  REQUIRE(errors[0] == "");
  REQUIRE(errors[1] == "");

  SECTION("1 process") {
    parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
    auto params = clones(at2);
    parallel::ShardedAdamW opt(params, kHyper, comm);
    opt.load_state(state, "test");
    const auto again = opt.gather_state();
    for (size_t k = 0; k < state.size(); ++k) CHECK(torch::equal(again[k], state[k]));
    sharded_steps(opt, params, g1, 0, 2, 4);
    CHECK(torch::equal(flat(params), flat(straight)));
    // without the moments the continuation differs: the state mattered
    auto fresh_params = clones(at2);
    parallel::ShardedAdamW fresh(fresh_params, kHyper, comm);
    sharded_steps(fresh, fresh_params, g1, 0, 2, 4);
    CHECK_FALSE(torch::equal(flat(fresh_params), flat(straight)));
    // float32 moments refuse the 8-bit state, naming the key
    parallel::ShardedAdamW f32(fresh_params, parallel::AdamWHyper{0.9, 0.95, 1e-8, 0.1, 32}, comm);
    CHECK_THROWS_WITH(f32.load_state(state, "x.pt"), Catch::Contains("optimizer.state_bits 8; resume it with state_bits 8"));
    CHECK_THROWS_WITH(opt.load_state(f32.gather_state(), "y.pt"),
                      Catch::Contains("optimizer.state_bits 32; resume it with state_bits 32"));
  }
  SECTION("3 ranks") {
    std::vector<std::vector<torch::Tensor>> params(3);
    std::vector<torch::Tensor> again;
    const auto e3 = test::run_ranks(3, [&](parallel::Comm& comm, int rank) {
      params[rank] = clones(at2);
      parallel::ShardedAdamW opt(params[rank], kHyper, comm);
      opt.load_state(state, "test");
      auto st = opt.gather_state();
      if (rank == 0) again = st;
      sharded_steps(opt, params[rank], g3, rank, 2, 4);
    });
    for (int r = 0; r < 3; ++r) REQUIRE(e3[r] == "");
    for (size_t k = 0; k < state.size(); ++k) CHECK(torch::equal(again[k], state[k]));
    for (int r = 0; r < 3; ++r) CHECK(torch::equal(flat(params[r]), flat(straight)));
  }
}

TEST_CASE("8-bit sharded step: a parameter no rank has a gradient for keeps its value and its blocks' codes",
          "[optim][adamw8bit][zero8bit]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto params = clones(initial());
  parallel::ShardedAdamW opt(params, kHyper, comm);
  const auto g = gradients(2, 1);
  sharded_steps(opt, params, g, 0, 0, 1);
  const auto before = clones(params);
  const auto state1 = opt.gather_state();
  for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = i == 1 ? torch::Tensor() : g[1][0][i].clone();
  opt.reduce_gradients();
  opt.step(kLr, 1.0);
  CHECK(torch::equal(params[1], before[1]));       // the 3000-element tensor (elements 2000 to 4999) is untouched
  CHECK_FALSE(torch::equal(params[0], before[0]));
  const auto state2 = opt.gather_state();
  // blocks 8 to 18 lie wholly inside it ([2048, 4864)): their codes and absmax kept bit for bit
  CHECK(torch::equal(state2[1].narrow(0, 2048, 2816), state1[1].narrow(0, 2048, 2816)));
  CHECK(torch::equal(state2[2].narrow(0, 8, 11), state1[2].narrow(0, 8, 11)));
  CHECK(torch::equal(state2[4].narrow(0, 8, 11), state1[4].narrow(0, 8, 11)));
}

// #65 item 1: the last block of the flat layout is partly padding (5307 elements: block 20 holds 187 of them). A
// checkpoint holds the parameters' codes, not the padding's; a resume that leaves the padding's exp_avg codes at 0
// (the map's -1, times the block's absmax) inflates that block's absmax when the moments shrink, and the run drifts
// from the uninterrupted one a few steps later. The continuation here has gradients 100x smaller than before the stop,
// so the moments decay and the block's absmax follows them down: every step of it must be the uninterrupted run's bit
// for bit, at the same world size and re-cut, with the moments on the device and offloaded.
TEST_CASE("ZeRO-1 8-bit moments resume bit for bit while the moments shrink (the last block's padding)",
          "[dist][optim][adamw8bit][zero8bit]") {
  for (bool offload : {false, true}) {
    INFO("offload " << offload);
    auto hyper = kHyper;
    hyper.offload = offload;
    const auto init = initial();
    auto g2 = gradients(8, 2);
    for (int t = 3; t < 8; ++t)
      for (auto& rank : g2[t])
        for (auto& x : rank) x = x / 128;  // still exact sums: multiples of 1/8192
    std::vector<torch::Tensor> at3, straight, state;
    auto errors = test::run_ranks(2, [&](parallel::Comm& comm, int rank) {
      auto params = clones(init);
      parallel::ShardedAdamW opt(params, hyper, comm);
      sharded_steps(opt, params, g2, rank, 0, 3);
      auto st = opt.gather_state();
      if (rank == 0) {
        state = st;
        at3 = clones(params);
      }
      sharded_steps(opt, params, g2, rank, 3, 8);
      if (rank == 0) straight = clones(params);
    });
    REQUIRE(errors[0] == "");
    REQUIRE(errors[1] == "");
    std::vector<std::vector<torch::Tensor>> params(2);
    const auto again = test::run_ranks(2, [&](parallel::Comm& comm, int rank) {
      params[rank] = clones(at3);
      parallel::ShardedAdamW opt(params[rank], hyper, comm);
      opt.load_state(state, "test");
      sharded_steps(opt, params[rank], g2, rank, 3, 8);
    });
    REQUIRE(again[0] == "");
    REQUIRE(again[1] == "");
    for (int r = 0; r < 2; ++r) CHECK(torch::equal(flat(params[r]), flat(straight)));
    // re-cut into one process: the continuation's gradients summed
    parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
    auto one = clones(at3);
    parallel::ShardedAdamW opt(one, hyper, comm);
    opt.load_state(state, "test");
    for (int t = 3; t < 8; ++t) {
      for (size_t i = 0; i < one.size(); ++i) one[i].mutable_grad() = g2[t][0][i] + g2[t][1][i];
      opt.reduce_gradients();
      opt.step(kLr, 1.0);
    }
    CHECK(torch::equal(flat(one), flat(straight)));
  }
}
