// distributed.optimizer_offload (parallel/shard_moments.h's offloaded store; docs/optimizer.md "Offload"): the moments
// (and ZeRO-3's float32 master shards) live in host memory and the step streams the shard through host staging a chunk
// at a time. On the CPU the device is the host, so what is proven here is the path, not the bandwidth: the state
// tensors are host tensors (pinned exactly when CUDA is there), the chunked step takes the on-device store's steps bit
// for bit (the same element-wise kernels on the same values; 8 bits: chunks on block boundaries), over several steps
// and through a checkpoint and resume, in ZeRO-1 and ZeRO-3 engines with float32 and 8-bit moments; the bytes moved are
// 13 a shard element a step (9 to the host, 4 back). The plan's host terms and the start-up refusal are in the last
// cases. (On a GPU the host's float32 arithmetic is IEEE as the device's, but the device may fuse multiply-adds: there
// the bar would be float tolerance, not bits.)
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <cstdlib>

#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/parallel/shard_moments.h"
#include "gspo/plan/memory.h"
#include "gspo/plan/model_shape.h"
#include "gspo/train/engines/update_engine.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::vector<torch::Tensor> every_moment(const parallel::ShardMoments& m) { return m.tensors(); }

bool same_state(const parallel::ShardMoments& a, const parallel::ShardMoments& b) {
  const auto x = every_moment(a), y = every_moment(b);
  if (x.size() != y.size()) return false;
  for (size_t k = 0; k < x.size(); ++k)
    if (!torch::equal(x[k], y[k])) return false;
  return true;
}

}  // namespace

TEST_CASE("offloaded shard moments: host tensors, a chunk at a time, the on-device steps bit for bit",
          "[optim][offload]") {
  for (int64_t bits : {32, 8}) {
    INFO(bits << "-bit moments");
    const int64_t n = 5000;  // chunks of 768: the last one short, every chunk on a block boundary
    auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
    auto p0 = torch::randn({n}, gen), p1 = p0.clone();
    auto active = torch::ones({n}, torch::kBool);
    active.narrow(0, 1000, 300).fill_(false);  // a parameter no rank has a gradient for
    auto here = parallel::make_shard_moments(bits, n, torch::TensorOptions(torch::kCPU));
    auto away = parallel::make_shard_moments(bits, n, torch::TensorOptions(torch::kCPU), /*offload=*/true, 768);
    const parallel::AdamWHyper h{0.9, 0.95, 1e-8, 0.1, bits};
    for (int t = 1; t <= 4; ++t) {
      auto g = torch::randn({n}, gen);
      here->step(p0, g, active, 1e-2, t, h);
      away->step(p1, g, active, 1e-2, t, h);
    }
    CHECK(torch::equal(p0, p1));
    CHECK(same_state(*here, *away));
    for (const auto& t : away->tensors()) {
      CHECK(t.device().is_cpu());
      CHECK(t.is_pinned() == torch::cuda::is_available());  // pinned host memory where a GPU would read it
    }
    CHECK(away->transferred_bytes() == 4 * n * 13);
    CHECK(here->transferred_bytes() == 0);
    CHECK_THROWS_AS(parallel::make_shard_moments(bits, n, torch::TensorOptions(torch::kCPU), true, 100),
                    std::invalid_argument);
  }
}

namespace {

train::EngineOptions engine_options(int64_t zero_stage, int64_t bits, bool offload) {
  train::EngineOptions o;
  o.optimizer.lr = 1e-2;
  o.optimizer.weight_decay = 0.1;
  o.optimizer.state_bits = bits;
  o.zero_stage = zero_stage;
  o.offload = offload;
  return o;
}

// A fixed quadratic loss over every parameter (the same gradients whatever the engine), through the engine's passes;
// `scale` scales the loss and so the gradients.
void one_step(model::Policy& policy, train::UpdateEngine& engine, int k, double scale = 1.0) {
  engine.zero_grad();
  torch::manual_seed(11 + k);
  at::Tensor loss = torch::zeros({}, torch::kFloat);
  for (auto& p : policy.parameters()) loss = loss + (p.to(torch::kFloat) - torch::randn(p.sizes())).pow(2).sum();
  loss = loss * scale;
  loss.backward();
  engine.after_backward();
  engine.reduce();
  engine.step(1e-2);
}

// The engine's float32 weights (the checkpoint path); `save_to`: the policy written there too.
// `staging`: a folder of the caller's own (ctest runs each case in its own process, side by side).
std::vector<torch::Tensor> weights(train::UpdateEngine& engine, model::Policy& policy, const std::string& save_to = "",
                                   const std::string& staging = "offload_staging") {
  engine.gather_for_save(test::fresh_dir(staging));
  std::vector<torch::Tensor> out;
  engine.with_float32_policy([&] {
    for (const auto& p : policy.parameters()) out.push_back(p.detach().to(torch::kFloat).clone());
    if (!save_to.empty()) policy.save(save_to);
  });
  return out;
}

}  // namespace

TEST_CASE("optimizer offload in the ZeRO-1 and ZeRO-3 engines takes the on-device steps and resumes bit for bit",
          "[optim][offload]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  for (int64_t stage : {1, 3})
    for (int64_t bits : {32, 8}) {
      INFO("zero_stage " << stage << ", " << bits << "-bit moments");
      auto pa = test::load_tiny("tiny_qwen3.pt"), pb = test::load_tiny("tiny_qwen3.pt");
      auto a = train::make_update_engine(pa, engine_options(stage, bits, false), comm);
      auto b = train::make_update_engine(pb, engine_options(stage, bits, true), comm);
      for (int k = 0; k < 3; ++k) {
        one_step(pa, *a, k);
        one_step(pb, *b, k);
      }
      CHECK(b->state_bytes() == a->state_bytes());
      const std::string dir = test::fresh_dir("offload_ckpt");
      core::ensure_dir(dir);
      const auto wa3 = weights(*a, pa), wb = weights(*b, pb, dir + "/policy.pt");
      b->save(dir);
      REQUIRE(wa3.size() == wb.size());
      for (size_t i = 0; i < wb.size(); ++i) CHECK(torch::equal(wa3[i], wb[i]));  // 3 steps: offloaded == on-device
      for (int k = 3; k < 5; ++k) one_step(pa, *a, k);
      const auto wa = weights(*a, pa);
      // resumed with offload from its own checkpoint: the 2 more steps of the uninterrupted on-device run
      auto pc = model::Policy::load(dir + "/policy.pt");
      auto c = train::make_update_engine(pc, engine_options(stage, bits, true), comm);
      c->load(dir);
      for (int k = 3; k < 5; ++k) one_step(pc, *c, k);
      const auto wc = weights(*c, pc);
      for (size_t i = 0; i < wa.size(); ++i) CHECK(torch::equal(wa[i], wc[i]));
    }
  auto p0 = test::load_tiny();
  CHECK_THROWS_WITH(train::make_update_engine(p0, engine_options(0, 32, true), comm),
                    Catch::Contains("distributed.optimizer_offload offloads the sharded optimizer state"));
}

// #65 item 1 through the engines: a resume continued while the moments shrink (gradients 1000x smaller after the stop,
// so each padded last block's absmax falls) is the uninterrupted run's bit for bit. Before the fix the padding's
// exp_avg codes came back as 0, the signed map's -1, and held the absmax up: the continuation drifted.
TEST_CASE("ZeRO-1 and ZeRO-3 with 8-bit moments resume bit for bit while the moments shrink", "[optim][offload][zero8bit]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  for (int64_t stage : {1, 3})
    for (bool offload : {false, true}) {
      INFO("zero_stage " << stage << ", offload " << offload);
      auto pa = test::load_tiny("tiny_qwen3.pt");
      auto a = train::make_update_engine(pa, engine_options(stage, 8, offload), comm);
      for (int k = 0; k < 3; ++k) one_step(pa, *a, k);
      const std::string dir = test::fresh_dir("shrink_ckpt");
      core::ensure_dir(dir);
      weights(*a, pa, dir + "/policy.pt", "shrink_staging");
      a->save(dir);
      for (int k = 3; k < 8; ++k) one_step(pa, *a, k, 1e-3);
      const auto wa = weights(*a, pa, "", "shrink_staging");
      auto pc = model::Policy::load(dir + "/policy.pt");
      auto c = train::make_update_engine(pc, engine_options(stage, 8, offload), comm);
      c->load(dir);
      for (int k = 3; k < 8; ++k) one_step(pc, *c, k, 1e-3);
      const auto wc = weights(*c, pc, "", "shrink_staging");
      REQUIRE(wa.size() == wc.size());
      int64_t differ = 0;
      for (size_t i = 0; i < wa.size(); ++i) differ += !torch::equal(wa[i], wc[i]);
      CHECK(differ == 0);
    }
}

TEST_CASE("plan: optimizer offload moves the moments (ZeRO-3: and the masters) to host memory and counts the transfers",
          "[plan][offload]") {
  const auto shape = plan::read_model_shape(test::model_path("tiny_qwen3.pt"));
  const double N = static_cast<double>(shape.num_parameters());
  plan::PlanInputs in;
  in.prompt_tokens = 4;
  auto with = [&](std::vector<std::string> sets) {
    sets.insert(sets.begin(), {"rollout.prompts_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=4",
                               "algorithm.num_minibatches=1",
                               "train.activation_checkpointing=true"});
    return plan::plan_memory(shape, config::load("", sets), in);
  };
  auto term = [](const std::vector<plan::Term>& ts, const std::string& name) {
    for (const auto& t : ts)
      if (t.name == name) return t.bytes;
    return -1.0;
  };
  const auto z1 = with({"distributed.zero_stage=1"}), z1o = with({"distributed.zero_stage=1",
                                                                   "distributed.optimizer_offload=true"});
  CHECK(z1.host.empty());
  CHECK(term(z1o.resident, "AdamW moments") == -1);
  CHECK(term(z1o.host, "AdamW moments") == 8 * N);
  CHECK(z1o.resident_bytes == Approx(z1.resident_bytes - 8 * N));
  CHECK(z1o.d2h_bytes == 9 * N);
  CHECK(z1o.h2d_bytes == 4 * N);
  CHECK(z1o.host_bytes == Approx(8 * N + 29 * N));  // the moments and the host step's chunk (here the whole shard)
  const auto z3 = with({"distributed.zero_stage=3"}),
             z3o = with({"distributed.zero_stage=3", "distributed.optimizer_offload=true", "optimizer.state_bits=8"});
  const double shard8 = std::ceil(N / 256) * 256;
  CHECK(term(z3.resident, "ZeRO-3 shards") == 16 * N);
  CHECK(term(z3o.resident, "ZeRO-3 gradient shards") == 4 * shard8);
  CHECK(term(z3o.host, "ZeRO-3 masters and moments") == (4 + 2 + 8.0 / 256) * shard8);
  CHECK(z3o.d2h_bytes == 5 * shard8);  // the gradient and the mask; the masters are on the host already
  CHECK(z3o.h2d_bytes == 0);

  // start-up: more host memory needed than available is a ConfigError naming the key and the numbers
  CHECK_NOTHROW(plan::check_offload_host_memory(z1o, 2, 2 * z1o.host_bytes));
  CHECK_THROWS_WITH(plan::check_offload_host_memory(z1o, 2, 2 * z1o.host_bytes - 1),
                    Catch::Contains("distributed.optimizer_offload: the optimizer state of 2 rank(s) on this node "
                                    "needs"));
  setenv("GSPO_HOST_AVAILABLE_MB", "3", 1);
  CHECK(plan::host_available_bytes() == 3 * 1024.0 * 1024.0);
  unsetenv("GSPO_HOST_AVAILABLE_MB");
  CHECK(plan::host_available_bytes() > 0);  // MemAvailable
}

TEST_CASE("GSPO_HOST_AVAILABLE_MB must be a finite positive number, and the offload check then names it",
          "[config][offload]") {
  // It used to be read with atof: "lots" was 0 MiB and "-5" negative, then reported as MemAvailable.
  for (const char* bad : {"lots", "-5", "0", "nan", "inf", "1e999", "12abc", " "}) {
    INFO("GSPO_HOST_AVAILABLE_MB='" << bad << "'");
    setenv("GSPO_HOST_AVAILABLE_MB", bad, 1);
    CHECK_THROWS_AS(plan::host_available_bytes(), ConfigError);
    CHECK_THROWS_WITH(plan::host_available_bytes(), Catch::Contains("GSPO_HOST_AVAILABLE_MB must be a positive number "
                                                                    "of MiB"));
  }
  setenv("GSPO_HOST_AVAILABLE_MB", "0.5", 1);
  CHECK(plan::host_available_bytes() == 0.5 * 1024 * 1024);
  plan::MemoryPlan p;
  p.host_bytes = 1024.0 * 1024 * 1024;
  CHECK_THROWS_WITH(plan::check_offload_host_memory(p, 1, plan::host_available_bytes()),
                    Catch::Contains("is available (GSPO_HOST_AVAILABLE_MB)"));
  unsetenv("GSPO_HOST_AVAILABLE_MB");
  CHECK_THROWS_WITH(plan::check_offload_host_memory(p, 1, 1.0), Catch::Contains("is available (MemAvailable)"));
}

TEST_CASE("distributed.optimizer_offload needs a sharded engine", "[config][offload]") {
  CHECK_THROWS_WITH(config::load("", {"distributed.optimizer_offload=true"}),
                    Catch::Contains("distributed.optimizer_offload offloads the sharded optimizer state: set "
                                    "distributed.zero_stage 1 or 3"));
  CHECK_NOTHROW(config::load("", {"distributed.optimizer_offload=true", "distributed.zero_stage=1"}));
}
