// ZeRO-3 (parallel/zero3.h behind train's UpdateEngine, distributed.zero_stage 3): the steps of a real training loss
// (sum of response log-probs x row weights, through the checkpointed per-layer pass) equal torch AdamW's in one
// process, at world size 1 and over 2 Gloo ranks that each take half the rows; a tied-embedding model, an MoE
// model and bf16 with float32 masters included (2 ranks against plain data parallelism on the same rows). The shards written by 2 ranks resume in 1 process (re-cut) and the
// next step equals the uninterrupted run's. Per-rank state bytes are what the shards hold. Whole-model methods and
// an uncheckpointed training pass are refused while the layers are sharded.
// With low-rank adapters: the base sharded frozen, the adapters' steps those over an unsharded base, and the whole
// hold samples the merged model (the last case).
// Tolerances: 1e-6 on weights against the same computation in another layout (plain data parallelism on the same
// rows per rank, one process at world size 1); 1e-4 against one process over every row (see the 2-rank case);
// bf16: mean |difference| 1e-5 (see that case).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/model/lora.h"
#include "gspo/model/policy.h"
#include "gspo/parallel/comm.h"
#include "gspo/train/logprobs.h"
#include "gspo/train/engines/update_engine.h"
#include "helpers.h"
#include "two_ranks.h"

using namespace gspo;

namespace {

struct Batch {
  torch::Tensor ids, mask;
  int64_t P;
};

// Four rollout-shaped rows (left-padded prompts, right-padded responses of different lengths). Its own generator:
// the two ranks of run_two_ranks are threads of one process, and seeding the global one from both raced (each rank
// could draw other rows).
Batch rows_batch() {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const int64_t n = 4, P = 5, R = 6;
  const int64_t prompt_len[n] = {5, 2, 4, 3}, resp_len[n] = {6, 3, 1, 5};
  auto ids = torch::randint(200, {n, P + R}, gen, torch::kLong);
  auto mask = torch::zeros({n, P + R}, torch::kLong);
  for (int64_t r = 0; r < n; ++r) mask[r].narrow(0, P - prompt_len[r], prompt_len[r] + resp_len[r]).fill_(1);
  return {ids, mask, P};
}

const double kRowWeight[4] = {1.0, -0.5, 0.3, 2.0};

// backward of -(sum over rows [first, first + count) of row weight x sum of its response log-probs).
void backward_rows(model::Policy& policy, const Batch& b, int64_t first, int64_t count) {
  auto ids = b.ids.narrow(0, first, count), mask = b.mask.narrow(0, first, count);
  const train::LogprobPass pass{true, true, true};
  auto lp = train::response_logprobs(policy, ids, mask, b.P, 1.0, train::Entropy::kSkip, 8, pass).logprobs;
  auto w = torch::tensor(std::vector<double>(kRowWeight + first, kRowWeight + first + count), torch::kFloat);
  auto resp = mask.narrow(1, b.P, ids.size(1) - b.P).to(torch::kFloat);
  (-(lp * resp).sum(1) * w).sum().backward();
}

train::EngineOptions options(config::Dtype dtype, int64_t zero_stage, bool overlap = true, int64_t bits = 32) {
  train::EngineOptions o;
  o.optimizer.state_bits = bits;
  o.overlap = overlap;
  o.optimizer.lr = 1e-2;
  o.optimizer.weight_decay = 0.1;
  o.optimizer.grad_clip = 0.5;  // clipping is exercised (the gradient norms here are larger)
  o.dtype = dtype;
  o.zero_stage = zero_stage;
  return o;
}

// `steps` optimizer steps on this rank's rows [first, first + count).
std::vector<double> take_steps(train::UpdateEngine& engine, model::Policy& policy, const Batch& b, int64_t first,
                               int64_t count, int steps) {
  std::vector<double> norms;
  for (int i = 0; i < steps; ++i) {
    engine.zero_grad();
    backward_rows(policy, b, first, count);
    engine.after_backward();
    norms.push_back(engine.reduce());
    engine.step(1e-2);
  }
  return norms;
}

// The float32 weights the engine holds (rank 0; collective): the checkpoint path (gather_for_save, then the policy
// with its float32 view). `save_to`: also write the policy there.
std::vector<torch::Tensor> float32_weights(train::UpdateEngine& engine, model::Policy& policy, parallel::Comm& comm,
                                           const std::string& staging, const std::string& save_to = "") {
  engine.gather_for_save(staging);
  std::vector<torch::Tensor> out;
  if (comm.is_main())
    engine.with_float32_policy([&] {
      for (const auto& p : policy.parameters()) out.push_back(p.detach().to(torch::kFloat).clone());
      if (!save_to.empty()) policy.save(save_to);
    });
  return out;
}

double max_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    REQUIRE(a[i].sizes() == b[i].sizes());
    worst = std::max(worst, (a[i] - b[i]).abs().max().item<double>());
  }
  return worst;
}

// Mean |a - b| over every element.
double mean_diff(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b) {
  double sum = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sum += (a[i] - b[i]).abs().sum().item<double>();
    n += static_cast<double>(a[i].numel());
  }
  return sum / n;
}

struct Result {
  std::vector<torch::Tensor> weights;
  std::vector<double> norms;
  model::GateStats gathers;  // over the steps taken
};

// One process, every row: torch AdamW (zero_stage 0) or ZeRO-3 at world size 1.
Result one_process(const std::string& model, config::Dtype dtype, int64_t zero_stage, int steps, int64_t bits = 32) {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto policy = test::load_tiny(model);
  auto engine = train::make_update_engine(policy, options(dtype, zero_stage, true, bits), comm);
  Result r;
  r.norms = take_steps(*engine, policy, rows_batch(), 0, 4, steps);
  r.weights = float32_weights(*engine, policy, comm, test::fresh_dir("zero3_one_" + model));
  return r;
}

// Two Gloo ranks, rows 0-1 on rank 0 and 2-3 on rank 1; rank 0's result.
Result two_ranks(const std::string& model, config::Dtype dtype, int64_t zero_stage, int steps, bool overlap = true,
                 int64_t bits = 32) {
  Result r0;
  const std::string staging = test::fresh_dir("zero3_two_" + model);
  auto errors = test::run_two_ranks([&](parallel::Comm& comm, int rank) {
    auto policy = test::load_tiny(model);
    auto engine = train::make_update_engine(policy, options(dtype, zero_stage, overlap, bits), comm);
    auto norms = take_steps(*engine, policy, rows_batch(), 2 * rank, 2, steps);
    const auto gathers = engine->take_gather_counts();
    auto w = float32_weights(*engine, policy, comm, staging);
    if (rank == 0) r0 = {w, norms, gathers};
  });
  REQUIRE(errors.error[0] == "");
  REQUIRE(errors.error[1] == "");
  return r0;
}

}  // namespace

TEST_CASE("ZeRO-3 at world size 1 takes torch AdamW's steps through the checkpointed per-layer pass") {
  for (const std::string model : {"tiny.pt", "tiny_qwen3.pt", "qwen3_moe_tiny.pt"}) {
    INFO(model);
    auto plain = one_process(model, config::Dtype::kFloat32, 0, 3);
    auto z3 = one_process(model, config::Dtype::kFloat32, 3, 3);
    CHECK(max_diff(z3.weights, plain.weights) < 1e-6);
    for (size_t i = 0; i < plain.norms.size(); ++i) CHECK(z3.norms[i] == Approx(plain.norms[i]).epsilon(1e-6));
    CHECK(max_diff(plain.weights, one_process(model, config::Dtype::kFloat32, 0, 0).weights) > 1e-3);  // it moved
  }
}

// Against plain data parallelism on the same rows per rank (the same sums of two halves: 1e-6), and against one
// process on every row (sums in another order; Adam's normalised step turns a sign flip of a near-zero gradient
// element into a difference of up to 2 lr, so 1e-4 over 3 steps of lr 1e-2).
TEST_CASE("ZeRO-3 on 2 Gloo ranks equals plain data parallelism and one process (dense, tied, MoE, bf16 masters)") {
  for (const std::string model : {"tiny.pt", "tiny_qwen3.pt", "qwen3_moe_tiny.pt"}) {
    INFO(model);
    auto dp = two_ranks(model, config::Dtype::kFloat32, 0, 3);
    auto z3 = two_ranks(model, config::Dtype::kFloat32, 3, 3);
    CHECK(max_diff(z3.weights, dp.weights) < 1e-6);
    for (size_t i = 0; i < dp.norms.size(); ++i) CHECK(z3.norms[i] == Approx(dp.norms[i]).epsilon(1e-6));
    CHECK(max_diff(z3.weights, one_process(model, config::Dtype::kFloat32, 0, 3).weights) < 1e-4);
  }
  auto bf16_dp = two_ranks("tiny.pt", config::Dtype::kBFloat16, 0, 3);
  auto bf16_z3 = two_ranks("tiny.pt", config::Dtype::kBFloat16, 3, 3);
  // bf16: the gathered weights are views into one flat buffer (other alignment than separate tensors), so a bf16
  // matmul may round an element differently and Adam turns that into up to 2 lr on a few weights: the mean holds.
  CHECK(max_diff(bf16_z3.weights, bf16_dp.weights) < 6e-2);
  CHECK(mean_diff(bf16_z3.weights, bf16_dp.weights) < 1e-5);
}

// distributed.zero3_overlap moves when the collectives complete, not what they compute: the same gathered bytes
// and the same reduced sums reach the same kernels in the same shapes, so bit for bit. Per step of one forward and
// one backward over L layers, 2L gathers: only the forward's first layer is not prefetched (the step before freed
// the layer kept for it, whose masters it changed); the last layer of the forward is kept for its backward.
TEST_CASE("ZeRO-3 overlap (prefetched gathers, reduce-scatters behind the next backward) takes the blocking steps bit for bit") {
  for (const std::string model : {"tiny_qwen3.pt", "qwen3_moe_tiny.pt"}) {
    INFO(model);
    const int steps = 3;
    const int64_t L = test::load_tiny(model).num_layers();
    auto blocking = two_ranks(model, config::Dtype::kFloat32, 3, steps, false);
    auto overlapped = two_ranks(model, config::Dtype::kFloat32, 3, steps, true);
    REQUIRE(blocking.weights.size() == overlapped.weights.size());
    for (size_t i = 0; i < blocking.weights.size(); ++i) CHECK(torch::equal(blocking.weights[i], overlapped.weights[i]));
    CHECK(blocking.norms == overlapped.norms);
    CHECK(blocking.gathers.gathers == steps * 2 * L);
    CHECK(blocking.gathers.prefetched == 0);
    CHECK(overlapped.gathers.gathers == steps * 2 * L);
    CHECK(overlapped.gathers.prefetched == steps * (2 * L - 1));
  }
}

TEST_CASE("ZeRO-3 shards written by 2 ranks resume re-cut in 1 process: the next step is the uninterrupted run's") {
  const std::string dir = test::fresh_dir("zero3_resume");
  const std::string ckpt = dir + "/ckpt", staging = dir + "/staging";
  core::ensure_dir(ckpt);
  std::vector<torch::Tensor> straight;  // the 2 ranks going on with a third step on the same rows
  auto errors = test::run_two_ranks([&](parallel::Comm& comm, int rank) {
    auto policy = test::load_tiny("tiny.pt");
    auto engine = train::make_update_engine(policy, options(config::Dtype::kFloat32, 3), comm);
    take_steps(*engine, policy, rows_batch(), 2 * rank, 2, 2);
    float32_weights(*engine, policy, comm, staging, ckpt + "/policy.pt");
    if (rank == 0) engine->save(ckpt);
    take_steps(*engine, policy, rows_batch(), 2 * rank, 2, 1);
    auto w = float32_weights(*engine, policy, comm, dir + "/staging_on");
    if (rank == 0) straight = w;
  });
  REQUIRE(errors.error[0] == "");
  REQUIRE(errors.error[1] == "");
  CHECK(core::exists(ckpt + "/optimizer_zero3_rank0.pt"));
  CHECK(core::exists(ckpt + "/optimizer_zero3_rank1.pt"));
  CHECK_FALSE(core::exists(staging));

  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto policy = model::Policy::load(ckpt + "/policy.pt");
  auto engine = train::make_update_engine(policy, options(config::Dtype::kFloat32, 3), comm);
  engine->load(ckpt);
  take_steps(*engine, policy, rows_batch(), 0, 4, 1);
  auto resumed = float32_weights(*engine, policy, comm, dir + "/staging2");
  CHECK(max_diff(resumed, straight) < 1e-6);

  // Without the moments (a fresh engine on the same weights) the step differs: the re-cut state mattered.
  auto fresh_policy = model::Policy::load(ckpt + "/policy.pt");
  auto fresh = train::make_update_engine(fresh_policy, options(config::Dtype::kFloat32, 3), comm);
  take_steps(*fresh, fresh_policy, rows_batch(), 0, 4, 1);
  CHECK(max_diff(float32_weights(*fresh, fresh_policy, comm, dir + "/staging3"), straight) > 1e-4);

  // The other engines refuse the ZeRO-3 checkpoint, naming the stage.
  auto other = model::Policy::load(ckpt + "/policy.pt");
  auto plain = train::make_update_engine(other, options(config::Dtype::kFloat32, 0), comm);
  CHECK_THROWS_WITH(plain->load(ckpt), Catch::Contains("written with distributed.zero_stage 3"));
}

TEST_CASE("ZeRO-3 holds 1/W of the training state per rank: sharded layers refuse whole-model and uncheckpointed use") {
  auto errors = test::run_two_ranks([&](parallel::Comm& comm, int rank) {
    auto policy = test::load_tiny("tiny.pt");
    // float32 master, gradient, exp_avg, exp_avg_sq of each unit's shard, plus unit 0 whole (4 bytes a parameter).
    int64_t expect = 0, u = 0;
    for (const auto& unit : policy.parameter_units()) {
      int64_t n = 0;
      for (const auto& p : unit) n += p.numel();
      expect += 16 * ((n + 1) / 2) + (u++ == 0 ? 4 * n : 0);
    }
    auto engine = train::make_update_engine(policy, options(config::Dtype::kFloat32, 3), comm);
    take_steps(*engine, policy, rows_batch(), 2 * rank, 2, 1);
    CHECK(engine->model_state_bytes() == expect);
    CHECK(engine->state_bytes() > 0);
    auto b = rows_batch();
    CHECK_THROWS_WITH(policy.logits(b.ids, b.mask), Catch::Contains("zero_stage 3"));
    {
      const train::LogprobPass uncheckpointed{true, false, true};
      CHECK_THROWS_WITH(train::response_logprobs(policy, b.ids, b.mask, b.P, 1.0, train::Entropy::kSkip, 8,
                                                 uncheckpointed),
                        Catch::Contains("activation checkpointing"));
    }
    engine->hold_whole(true);
    CHECK(policy.logits(b.ids, b.mask).size(2) > 0);  // whole now: the rollout's forward runs
    CHECK(engine->model_state_bytes() > expect);
    engine->hold_whole(false);
    CHECK(engine->model_state_bytes() == expect);
  });
  CHECK(errors.error[0] == "");
  CHECK(errors.error[1] == "");
}

TEST_CASE("ZeRO-3 refuses a model without the per-layer methods, naming the key") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto policy = test::load_tiny("tiny_without_layers.pt");
  CHECK_THROWS_WITH(train::make_update_engine(policy, options(config::Dtype::kFloat32, 3), comm),
                    Catch::Contains("distributed.zero_stage 3"));
}

namespace {

double rel_err(const torch::Tensor& got, const torch::Tensor& want) {
  return (got - want).norm().item<double>() / std::max(want.norm().item<double>(), 1e-12);
}

struct LoraRun {
  std::vector<torch::Tensor> adapters;  // A then B of each, after the steps
  std::vector<double> norms;
  int64_t state_bytes = 0;
  int64_t base_layer_numel = 0;        // the base's decoder-layer parameters (what ZeRO-3 shards)
  bool base_grads = false;             // a base parameter got a gradient
  torch::Tensor view_logits, merged_logits;  // ZeRO-3: the whole hold's ungated view; the base merged by hand
};

// Rank-4 adapters (alpha 8) on `model`, trained `steps` steps on rows [first, first + count) by the engine of
// `zero_stage`; with ZeRO-3 also the logits the whole hold samples with, and the reference merge's.
LoraRun lora_run(const std::string& model, parallel::Comm& comm, int64_t zero_stage, int64_t first, int64_t count,
                 int steps) {
  auto policy = test::load_tiny(model);
  model::LoraSpec spec;
  spec.rank = 4;
  spec.alpha = 8;
  model::LoraAdapters lora(policy, spec);
  policy.add_gate(&lora);
  LoraRun r;
  const auto units = policy.parameter_units();
  for (size_t u = 1; u < units.size(); ++u)
    for (const auto& p : units[u]) r.base_layer_numel += p.numel();
  auto o = options(config::Dtype::kFloat32, zero_stage);
  o.lora = &lora;
  auto engine = train::make_update_engine(policy, o, comm);
  r.norms = take_steps(*engine, policy, rows_batch(), first, count, steps);
  for (const auto& t : lora.parameters()) r.adapters.push_back(t.detach().clone());
  for (const auto& p : policy.parameters()) r.base_grads = r.base_grads || p.grad().defined();
  if (zero_stage != 3) {
    r.state_bytes = engine->model_state_bytes();
    return r;
  }
  const auto b = rows_batch();
  torch::NoGradGuard g;
  {
    const train::WholeWeights whole(*engine);
    r.view_logits = policy.ungated_view().logits(b.ids, b.mask).to(torch::kFloat);
  }
  // after the whole hold nothing is gathered (overlap keeps the layer a next forward starts with until then)
  r.state_bytes = engine->model_state_bytes();
  auto ref = test::load_tiny(model);
  for (const auto& a : lora.adapters()) ref.parameter(a.name).add_(lora.scale() * a.B.matmul(a.A));
  r.merged_logits = ref.logits(b.ids, b.mask).to(torch::kFloat);
  return r;
}

}  // namespace

// model.lora_rank with distributed.zero_stage 3: the frozen base sharded (no masters, moments or gradients), the
// adapters replicated and stepped by ZeRO-1. Against the same adapters trained over an unsharded base: 2 ranks with
// ZeRO-1 on the same rows per rank (the same sums: 1e-6) and one process over every row (1e-4, as above). The whole
// hold's view samples the adapted model: logits within 1e-5 (relative) of the base with W + (alpha / r) B A added.
TEST_CASE("ZeRO-3 with low-rank adapters: a sharded frozen base trains the adapters as an unsharded one, and the whole "
          "hold samples the merged model", "[lora]") {
  for (const std::string model : {"tiny.pt", "tiny_qwen3.pt", "qwen3_moe_tiny.pt"}) {
    INFO(model);
    parallel::Comm one(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
    const auto whole = lora_run(model, one, 0, 0, 4, 3);
    LoraRun z1, z3;
    for (int64_t stage : {1, 3}) {
      auto errors = test::run_two_ranks([&](parallel::Comm& comm, int rank) {
        auto r = lora_run(model, comm, stage, 2 * rank, 2, 3);
        if (rank == 0) (stage == 1 ? z1 : z3) = std::move(r);
      });
      REQUIRE(errors.error[0] == "");
      REQUIRE(errors.error[1] == "");
    }
    CHECK(max_diff(z3.adapters, z1.adapters) < 1e-6);
    for (size_t i = 0; i < z1.norms.size(); ++i) CHECK(z3.norms[i] == Approx(z1.norms[i]).epsilon(1e-6));
    CHECK(max_diff(z3.adapters, whole.adapters) < 1e-4);
    CHECK(max_diff(whole.adapters, lora_run(model, one, 0, 0, 4, 0).adapters) > 1e-3);  // they moved
    CHECK_FALSE(z3.base_grads);
    // half the decoder layers' base a rank (float32 here; padding aside), nothing else of the base's changes
    CHECK(z3.state_bytes < z1.state_bytes - 4 * (z3.base_layer_numel / 2) + 64);
    CHECK(rel_err(z3.view_logits, z3.merged_logits) < 1e-5);
    CHECK(rel_err(z3.view_logits, lora_run(model, one, 3, 0, 4, 0).view_logits) > 1e-3);  // the merge mattered
  }
}

// optimizer.state_bits 8 under ZeRO-3 (parallel/shard_moments.h): each unit's shards are whole 256-element blocks, so
// 2 ranks quantise the blocks one process does. The gradients' sums differ in order (as in the float32 case above), and
// a last-bit difference that moves a moment across a code's midpoint costs up to one code step of that moment (a few
// per cent of it) in the next step: up to ~lr x 0.05 on a few weights over 3 steps, so max 1e-3, mean 1e-6 (measured
// 2026-11-28: max 4.0e-5 / 6.4e-4 and mean 3.8e-9 / 5.3e-8 for tiny_qwen3 / qwen3_moe_tiny). Against float32 moments:
// within 10% of the movement (measured: 0.8% and 0.9%). A checkpoint of 2 ranks resumes re-cut in 1 process: the next
// step equals the uninterrupted run's within 1e-6 (the state copies exactly; the gradients' order differs), and
// float32 ZeRO-3 refuses it by name.
TEST_CASE("ZeRO-3 with 8-bit moments: 2 ranks take one process's steps and resume re-cut in 1 process", "[zero8bit]") {
  for (const std::string model : {"tiny_qwen3.pt", "qwen3_moe_tiny.pt"}) {
    INFO(model);
    auto two = two_ranks(model, config::Dtype::kFloat32, 3, 3, true, 8);
    auto one = one_process(model, config::Dtype::kFloat32, 3, 3, 8);
    auto f32 = one_process(model, config::Dtype::kFloat32, 3, 3, 32);
    auto start = one_process(model, config::Dtype::kFloat32, 3, 0, 32);
    INFO("8-bit ZeRO-3 2 ranks vs 1 process: max " << max_diff(two.weights, one.weights) << ", mean "
         << mean_diff(two.weights, one.weights));
    CHECK(max_diff(two.weights, one.weights) < 1e-3);
    CHECK(mean_diff(two.weights, one.weights) < 1e-6);
    const double moved = mean_diff(f32.weights, start.weights), off = mean_diff(one.weights, f32.weights);
    INFO("8-bit vs float32 moments: mean difference " << off << " of a mean movement " << moved);
    CHECK(moved > 1e-3);
    CHECK(off < 0.1 * moved);
  }
  const std::string dir = test::fresh_dir("zero3_8bit_resume");
  const std::string ckpt = dir + "/ckpt";
  core::ensure_dir(ckpt);
  std::vector<torch::Tensor> straight;
  auto errors = test::run_two_ranks([&](parallel::Comm& comm, int rank) {
    auto policy = test::load_tiny("tiny_qwen3.pt");
    auto engine = train::make_update_engine(policy, options(config::Dtype::kFloat32, 3, true, 8), comm);
    take_steps(*engine, policy, rows_batch(), 2 * rank, 2, 2);
    float32_weights(*engine, policy, comm, dir + "/staging", ckpt + "/policy.pt");
    if (rank == 0) engine->save(ckpt);
    take_steps(*engine, policy, rows_batch(), 2 * rank, 2, 1);
    auto w = float32_weights(*engine, policy, comm, dir + "/staging_on");
    if (rank == 0) straight = w;
  });
  REQUIRE(errors.error[0] == "");
  REQUIRE(errors.error[1] == "");
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto policy = model::Policy::load(ckpt + "/policy.pt");
  auto engine = train::make_update_engine(policy, options(config::Dtype::kFloat32, 3, true, 8), comm);
  engine->load(ckpt);
  take_steps(*engine, policy, rows_batch(), 0, 4, 1);
  CHECK(max_diff(float32_weights(*engine, policy, comm, dir + "/staging2"), straight) < 1e-6);
  auto other = model::Policy::load(ckpt + "/policy.pt");
  auto f32 = train::make_update_engine(other, options(config::Dtype::kFloat32, 3, true, 32), comm);
  CHECK_THROWS_WITH(f32->load(ckpt), Catch::Contains("optimizer.state_bits 8; resume it with state_bits 8"));
}
