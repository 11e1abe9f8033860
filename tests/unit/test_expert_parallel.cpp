// Expert parallelism's exchange (parallel/expert_parallel.h) against one process holding every expert: Qwen3-MoE's
// sparse MLP written as plain per-token loops (softmax in float32, top-k, renormalised, sum of the chosen experts'
// SwiGLU outputs), over all the ranks' tokens together. On 2 and 3 Gloo ranks, each with its own tokens and 1/E of the
// experts: outputs, token gradients and the local experts' gradients equal the reference's within 1e-5 (float32;
// sums in another order), the router's gradient summed over the ranks too. Adversarial routing (Routing Replay's
// given experts): every token of every rank to the last rank's experts (the others receive nothing), and a rank
// with no token at all. Bitwise determinism over two runs. And inside an exported Qwen3-MoE (its ep_api methods):
// each MoE layer with the experts on 2 ranks equals the model's own layer over every row (outputs, gradients of the
// input, the experts and the router within 1e-5), and at world size 1 within 1e-6; checkpointed (the backward
// recomputing the layer and its exchanges) it gives the uncheckpointed values (1e-7).
#include <catch2/catch.hpp>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <numeric>
#include <utility>
#include <vector>

#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/expert_layer.h"
#include "gspo/parallel/expert_parallel.h"
#include "gspo/parallel/expert_shards.h"
#include "helpers.h"
#include "two_ranks.h"

using namespace gspo;

namespace {

constexpr int64_t kH = 8, kI = 12, kTopK = 2;

struct Moe {
  torch::Tensor x, router, gate, up, down, r;  // every token, every expert; r: the loss's weights
};

Moe make_moe(int64_t tokens, int64_t experts, uint64_t seed) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto rnd = [&](std::vector<int64_t> shape, double scale) { return torch::randn(shape, g, torch::kFloat) * scale; };
  return {rnd({tokens, kH}, 1.0), rnd({experts, kH}, 1.0), rnd({experts, kI, kH}, 0.3), rnd({experts, kI, kH}, 0.3),
          rnd({experts, kH, kI}, 0.3), rnd({tokens, kH}, 1.0)};
}

// One process, every expert, token by token.
torch::Tensor reference(const torch::Tensor& x, const torch::Tensor& router, const torch::Tensor& gate,
                        const torch::Tensor& up, const torch::Tensor& down, const torch::Tensor& routes) {
  std::vector<torch::Tensor> rows;
  for (int64_t t = 0; t < x.size(0); ++t) {
    const auto p = torch::softmax(torch::matmul(router, x[t]), 0);
    torch::Tensor idx = routes.defined() ? routes[t] : std::get<1>(p.topk(kTopK));
    const auto w = p.index_select(0, idx);
    const auto wn = w / w.sum();
    auto out = torch::zeros({kH});
    for (int64_t j = 0; j < kTopK; ++j) {
      const int64_t e = idx[j].item<int64_t>();
      const auto h = torch::silu(torch::matmul(gate[e], x[t])) * torch::matmul(up[e], x[t]);
      out = out + wn[j] * torch::matmul(down[e], h);
    }
    rows.push_back(out);
  }
  return rows.empty() ? torch::zeros({0, kH}) : torch::stack(rows);
}

double max_diff(const torch::Tensor& a, const torch::Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  return a.numel() == 0 ? 0.0 : (a - b).abs().max().item<double>();
}

struct Grads {
  torch::Tensor out, x, router, gate, up, down;
};

// Rank `rank` of `W`: tokens [first, first + count) of `m`, experts [rank n / W, (rank + 1) n / W).
Grads run_rank(parallel::Comm& comm, const Moe& m, int64_t first, int64_t count, const torch::Tensor& routes) {
  const int64_t W = comm.world_size(), n = m.router.size(0), per = n / W, e0 = comm.rank() * per;
  auto leaf = [](const torch::Tensor& t) { return t.clone().requires_grad_(true); };
  auto x = leaf(m.x.narrow(0, first, count)), router = leaf(m.router);
  auto gate = leaf(m.gate.narrow(0, e0, per)), up = leaf(m.up.narrow(0, e0, per)), down = leaf(m.down.narrow(0, e0, per));
  const auto my_routes = routes.defined() ? routes.narrow(0, first, count) : routes;
  auto out = parallel::expert_parallel_moe(x, router, gate, up, down, kTopK, true, comm, my_routes);
  (out * m.r.narrow(0, first, count)).sum().backward();
  auto router_grad = router.grad().defined() ? router.grad().clone() : torch::zeros_like(router);
  comm.all_reduce(router_grad);  // each rank's tokens' share
  return {out.detach(), x.grad(), router_grad, gate.grad(), up.grad(), down.grad()};
}

// The reference over every token: its output and gradients.
Grads run_reference(const Moe& m, const torch::Tensor& routes) {
  auto leaf = [](const torch::Tensor& t) { return t.clone().requires_grad_(true); };
  auto x = leaf(m.x), router = leaf(m.router), gate = leaf(m.gate), up = leaf(m.up), down = leaf(m.down);
  auto out = reference(x, router, gate, up, down, routes);
  (out * m.r).sum().backward();
  return {out.detach(), x.grad(), router.grad(), gate.grad(), up.grad(), down.grad()};
}

// Each rank's share of the reference equals what the rank computed.
void check_ranks(int W, const std::vector<int64_t>& counts, int64_t experts, const torch::Tensor& routes = {}) {
  const int64_t tokens = std::accumulate(counts.begin(), counts.end(), int64_t{0});
  const auto m = make_moe(tokens, experts, 11);
  const auto ref = run_reference(m, routes);
  std::vector<Grads> got(static_cast<size_t>(W));
  const auto errors = test::run_ranks(W, [&](parallel::Comm& comm, int rank) {
    int64_t first = 0;
    for (int q = 0; q < rank; ++q) first += counts[q];
    got[rank] = run_rank(comm, m, first, counts[rank], routes);
  });
  for (int r = 0; r < W; ++r) REQUIRE(errors[r] == "");
  int64_t first = 0;
  const int64_t per = experts / W;
  for (int r = 0; r < W; ++r) {
    INFO("rank " << r << " of " << W << ", " << counts[r] << " tokens");
    CHECK(max_diff(got[r].out, ref.out.narrow(0, first, counts[r])) < 1e-5);
    if (counts[r] > 0) CHECK(max_diff(got[r].x, ref.x.narrow(0, first, counts[r])) < 1e-5);
    CHECK(max_diff(got[r].router, ref.router) < 1e-5);
    // an expert's gradient sums every rank's tokens routed to it: its owner has them all (no reduction needed)
    const std::vector<std::pair<torch::Tensor, torch::Tensor>> experts_grads{
        {got[r].gate, ref.gate}, {got[r].up, ref.up}, {got[r].down, ref.down}};
    for (const auto& [mine, all] : experts_grads) {
      const auto want = all.narrow(0, r * per, per);
      CHECK(max_diff(mine.defined() ? mine : torch::zeros_like(want), want) < 1e-5);
    }
    first += counts[r];
  }
}

}  // namespace

TEST_CASE("expert parallelism: each rank's tokens through experts spread over 2 and 3 ranks equal one process holding "
          "them all, outputs and gradients", "[dist][ep]") {
  SECTION("2 ranks, 4 experts") { check_ranks(2, {5, 7}, 4); }
  SECTION("3 ranks, 6 experts") { check_ranks(3, {4, 6, 3}, 6); }
}

TEST_CASE("expert parallelism: adversarial routing, every token to one rank's experts, and a rank without tokens",
          "[dist][ep]") {
  SECTION("every token of 3 ranks to the last rank's two experts: the others receive nothing") {
    auto routes = torch::tensor({4, 5}, torch::kLong).repeat({12, 1});
    routes.index_put_({torch::indexing::Slice(0, torch::indexing::None, 2)}, torch::tensor({5, 4}, torch::kLong));
    check_ranks(3, {4, 5, 3}, 6, routes);
  }
  SECTION("rank 0 has no token; its experts still serve rank 1's") {
    auto routes = torch::tensor({0, 3}, torch::kLong).repeat({6, 1});
    check_ranks(2, {0, 6}, 4, routes);
  }
}

TEST_CASE("expert parallelism: the same inputs give the same bits twice", "[dist][ep]") {
  const auto m = make_moe(10, 4, 5);
  std::vector<torch::Tensor> runs[2];
  for (int run = 0; run < 2; ++run) {
    const auto errors = test::run_ranks(2, [&](parallel::Comm& comm, int rank) {
      const auto g = run_rank(comm, m, rank * 5, 5, {});
      if (rank == 1) runs[run] = {g.out, g.x, g.router, g.gate, g.down};
    });
    REQUIRE(errors[0] == "");
    REQUIRE(errors[1] == "");
  }
  for (size_t i = 0; i < runs[0].size(); ++i) CHECK(torch::equal(runs[0][i], runs[1][i]));
}

TEST_CASE("expert parallelism: bad routing is refused before anything is sent", "[ep]") {
  parallel::Comm one(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  CHECK_THROWS_WITH(parallel::ExpertRoute(torch::tensor({{0, 4}}, torch::kLong), 4, one),
                    Catch::Contains("outside [0, 4)"));
  CHECK_THROWS_WITH(parallel::ExpertRoute(torch::tensor({{0, 1}}, torch::kInt), 4, one), Catch::Contains("int64"));
}

namespace {

struct LayerRun {
  torch::Tensor out, x_grad, router_grad;
  std::vector<torch::Tensor> expert_grads;  // gate, up, down of experts [first, first + count)
};

// Decoder layer `layer` of qwen3_moe_tiny over rows [first, first + count): the model's own layer (comm null) or its
// expert-parallel form; loss sum(out * R).
LayerRun run_layer(int64_t layer, const torch::Tensor& ids, const torch::Tensor& r, int64_t first, int64_t count,
                   parallel::Comm* comm, bool checkpoint = false) {
  auto policy = test::load_tiny("qwen3_moe_tiny.pt");
  for (auto& p : policy.parameters()) p.requires_grad_(true);
  const auto rows = ids.narrow(0, first, count);
  const auto ctx = policy.layer_context(torch::ones_like(rows));
  auto x = policy.embed(rows).detach().requires_grad_(true);
  auto out = comm ? parallel::expert_parallel_layer(policy, layer, x, ctx, *comm, {}, checkpoint)
                  : policy.layer(layer, x, ctx, /*checkpoint=*/false);
  (out * r.narrow(0, first, count)).sum().backward();
  const std::string prefix = "layers." + std::to_string(layer) + ".mlp.";
  LayerRun run{out.detach(), x.grad(), policy.parameter(prefix + "gate.weight").grad().clone(), {}};
  if (comm) comm->all_reduce(run.router_grad);
  const int64_t n = policy.parameter(prefix + "gate.weight").size(0), W = comm ? comm->world_size() : 1;
  const int64_t e0 = comm ? comm->rank() * n / W : 0;
  for (int64_t e = e0; e < e0 + n / W; ++e)
    for (const char* proj : {"gate_proj", "up_proj", "down_proj"}) {
      const auto g = policy.parameter(prefix + "experts." + std::to_string(e) + "." + proj + ".weight").grad();
      run.expert_grads.push_back(g.defined() ? g.clone() : torch::Tensor());
    }
  return run;
}

}  // namespace

TEST_CASE("expert parallelism in an exported Qwen3-MoE: each MoE layer with its experts on 2 ranks equals the model's "
          "own layer, outputs and gradients", "[dist][ep]") {
  auto probe = test::load_tiny("qwen3_moe_tiny.pt");
  REQUIRE(probe.has_expert_parallel());
  REQUIRE_FALSE(probe.moe_layers().empty());
  CHECK(probe.moe_routing(probe.moe_layers()[0]).first == 2);
  auto g = at::make_generator<at::CPUGeneratorImpl>(7);
  const auto ids = torch::randint(3, 200, {4, 6}, g, torch::kLong);
  const int64_t H = probe.manifest().hidden_size;
  const auto r = torch::randn({4, 6, H}, g);
  for (int64_t layer : probe.moe_layers()) {
    INFO("layer " << layer);
    const auto ref = run_layer(layer, ids, r, 0, 4, nullptr);
    parallel::Comm one(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
    const auto alone = run_layer(layer, ids, r, 0, 4, &one);
    CHECK(max_diff(alone.out, ref.out) < 1e-6);
    CHECK(max_diff(alone.x_grad, ref.x_grad) < 1e-6);
    std::vector<LayerRun> got(2), recomputed(2);
    const auto errors = test::run_ranks(2, [&](parallel::Comm& comm, int rank) {
      got[rank] = run_layer(layer, ids, r, 2 * rank, 2, &comm);
      recomputed[rank] = run_layer(layer, ids, r, 2 * rank, 2, &comm, /*checkpoint=*/true);
    });
    REQUIRE(errors[0] == "");
    REQUIRE(errors[1] == "");
    for (int rank = 0; rank < 2; ++rank) {
      INFO("rank " << rank);
      CHECK(max_diff(got[rank].out, ref.out.narrow(0, 2 * rank, 2)) < 1e-5);
      CHECK(max_diff(got[rank].x_grad, ref.x_grad.narrow(0, 2 * rank, 2)) < 1e-5);
      CHECK(max_diff(got[rank].router_grad, ref.router_grad) < 1e-5);
      // activation checkpointing: the backward recomputes the layer, exchanges included: the same values
      CHECK(max_diff(recomputed[rank].out, got[rank].out) < 1e-7);
      CHECK(max_diff(recomputed[rank].x_grad, got[rank].x_grad) < 1e-7);
      CHECK(max_diff(recomputed[rank].router_grad, got[rank].router_grad) < 1e-7);
      for (size_t i = 0; i < got[rank].expert_grads.size(); ++i)
        if (got[rank].expert_grads[i].defined())
          CHECK(max_diff(recomputed[rank].expert_grads[i], got[rank].expert_grads[i]) < 1e-7);
      for (size_t i = 0; i < got[rank].expert_grads.size(); ++i) {
        const auto& want = ref.expert_grads[rank * got[rank].expert_grads.size() + i];
        const auto& mine = got[rank].expert_grads[i];
        CHECK(max_diff(mine.defined() ? mine : torch::zeros_like(want), want.defined() ? want : torch::zeros_like(mine)) < 1e-5);
      }
    }
  }
}

TEST_CASE("expert shards: a rank keeps its experts, frees the others, and gathers them back whole", "[dist][ep]") {
  auto whole = test::load_tiny("qwen3_moe_tiny.pt");
  const auto ids = torch::randint(3, 200, {2, 5}, torch::kLong);
  const auto mask = torch::ones({2, 5}, torch::kLong);
  const auto want = whole.logits(ids, mask);
  const auto named = whole.named_parameters();
  for (int E : {2, 4}) {
    INFO("E = " << E);
    std::vector<torch::Tensor> logits(E);
    std::vector<int64_t> kept(E), freed(E);
    const auto errors = test::run_ranks(E, [&](parallel::Comm& world, int rank) {
      auto policy = test::load_tiny("qwen3_moe_tiny.pt");
      const auto groups = parallel::open_expert_groups(world, E);
      parallel::ExpertShards shards(policy, *groups.group);
      kept[rank] = static_cast<int64_t>(shards.local().size());
      for (const auto& p : shards.remote()) freed[rank] += p.numel();
      // every expert parameter placed: kept ones hold the file's values, the owner of a freed one is another rank
      for (const auto& [name, value] : named) {
        const auto* at = shards.place(policy.parameter(name));
        if (name.find(".experts.") == std::string::npos) {
          if (at) throw std::runtime_error(name + " placed as an expert");
          continue;
        }
        if (!at) throw std::runtime_error(name + " not placed");
        const int64_t e = std::stoll(name.substr(name.find(".experts.") + 9));
        if (at->owner != e / (4 / E) || at->kept != (at->owner == rank))
          throw std::runtime_error(name + ": owner " + std::to_string(at->owner));
        if (at->kept && !torch::equal(policy.parameter(name), value)) throw std::runtime_error(name + " changed");
      }
      bool refused = false;
      try {
        policy.logits(ids, mask);
      } catch (const std::exception&) {
        refused = true;
      }
      if (!refused) throw std::runtime_error("the whole-model method ran without the freed experts");
      shards.hold_whole(true);
      logits[rank] = policy.logits(ids, mask);
      for (const auto& [name, value] : named)
        if (!torch::equal(policy.parameter(name), value)) throw std::runtime_error(name + " gathered wrong");
      shards.hold_whole(false);
      for (const auto& p : shards.remote())
        if (p.numel() != 0) throw std::runtime_error("a freed expert kept its values");
    });
    for (int rank = 0; rank < E; ++rank) {
      INFO("rank " << rank);
      REQUIRE(errors[rank] == "");
      CHECK(kept[rank] == 2 * 3 * (4 / E));  // 2 MoE layers x gate/up/down x the rank's experts
      CHECK(freed[rank] == 0);
      CHECK(torch::equal(logits[rank], want));  // the same weights, the same code path: the same bits
    }
  }
}

TEST_CASE("expert groups: E consecutive ranks share the experts, the ranks at the same place are replicas", "[dist][ep]") {
  std::vector<std::vector<int64_t>> seen(4);
  const auto errors = test::run_ranks(4, [&](parallel::Comm& world, int rank) {
    const auto g = parallel::open_expert_groups(world, 2);
    // who is where: the sum of world ranks over each group tells the members apart
    auto in_group = torch::tensor({static_cast<double>(rank)}, torch::kDouble);
    auto in_replicas = in_group.clone();
    g.group->all_reduce(in_group);
    g.replicas->all_reduce(in_replicas);
    seen[rank] = {g.group->rank(), g.group->world_size(), static_cast<int64_t>(in_group.item<double>()),
                  g.replicas->rank(), g.replicas->world_size(), static_cast<int64_t>(in_replicas.item<double>())};
  });
  for (int rank = 0; rank < 4; ++rank) REQUIRE(errors[rank] == "");
  CHECK(seen[0] == std::vector<int64_t>{0, 2, 1, 0, 2, 2});  // group {0, 1}, replicas {0, 2}
  CHECK(seen[1] == std::vector<int64_t>{1, 2, 1, 0, 2, 4});  // group {0, 1}, replicas {1, 3}
  CHECK(seen[2] == std::vector<int64_t>{0, 2, 5, 1, 2, 2});  // group {2, 3}, replicas {0, 2}
  CHECK(seen[3] == std::vector<int64_t>{1, 2, 5, 1, 2, 4});
  const auto one = test::run_ranks(1, [](parallel::Comm& world, int) { parallel::open_expert_groups(world, 2); });
  CHECK_THAT(one[0], Catch::Contains("expert parallelism over 2 ranks does not divide a world of 1"));
}
