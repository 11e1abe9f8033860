// The update engines (train/engines/update_engine.h) through their one interface: plain AdamW and ZeRO-1, each with float32
// weights or bf16 weights with float32 masters, take the same steps at world size 1; each refuses the other's
// checkpoint; state bytes and the float32 view for checkpoints are what they claim; the clip rule of the engines that
// scale the gradient themselves.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/parallel/comm.h"
#include "gspo/model/policy.h"
#include "gspo/train/engines/grad_clip.h"
#include "gspo/train/engines/update_engine.h"
#include "helpers.h"

using namespace gspo;

namespace {

train::EngineOptions options(config::Dtype dtype, int64_t zero_stage) {
  train::EngineOptions o;
  o.optimizer.lr = 1e-2;
  o.optimizer.weight_decay = 0.1;
  o.optimizer.grad_clip = 1.0;  // the gradients below are larger: clipping is exercised
  o.dtype = dtype;
  o.zero_stage = zero_stage;
  return o;
}

// A fixed quadratic loss over every parameter: the same gradients whatever the engine.
void backward(model::Policy& policy) {
  torch::manual_seed(7);
  at::Tensor loss = torch::zeros({}, torch::kFloat);
  for (auto& p : policy.parameters()) {
    auto target = torch::randn(p.sizes(), torch::kFloat);
    loss = loss + (p.to(torch::kFloat) - target).pow(2).sum();
  }
  loss.backward();
}

struct Run {
  std::vector<at::Tensor> weights;  // float32 copies after the steps
  std::vector<double> norms;
};

Run train_steps(config::Dtype dtype, int64_t zero_stage, int steps) {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto policy = test::load_tiny();
  auto engine = train::make_update_engine(policy, options(dtype, zero_stage), comm);
  Run r;
  for (int i = 0; i < steps; ++i) {
    engine->zero_grad();
    backward(policy);
    engine->after_backward();
    r.norms.push_back(engine->reduce());
    engine->step(1e-2);
  }
  for (const auto& p : policy.parameters()) r.weights.push_back(p.detach().to(torch::kFloat).clone());
  return r;
}

double max_diff(const Run& a, const Run& b) {
  double worst = 0;
  for (size_t i = 0; i < a.weights.size(); ++i)
    worst = std::max(worst, (a.weights[i] - b.weights[i]).abs().max().item<double>());
  return worst;
}

}  // namespace

TEST_CASE("update engines: AdamW and ZeRO-1 take the same steps at world size 1 (float32 and bf16 masters)",
          "[train][optim]") {
  auto initial = test::load_tiny();
  for (auto dtype : {config::Dtype::kFloat32, config::Dtype::kBFloat16}) {
    INFO("model.dtype " << config::name_of(dtype));
    const auto adamw = train_steps(dtype, 0, 3);
    const auto zero = train_steps(dtype, 1, 3);
    REQUIRE(adamw.norms.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(adamw.norms[i] > 1.0);  // clipped: the norm is over grad_clip
      // The same gradients summed in another order (ZeRO-1 in float64 over the flat shard, torch in float32 per
      // parameter): 1e-5 relative.
      CHECK(zero.norms[i] == Approx(adamw.norms[i]).epsilon(1e-5));
    }
    // float32: summation order only (1e-6); bf16: the same float32 masters rounded, so at most one bf16 step apart.
    CHECK(max_diff(adamw, zero) <= (dtype == config::Dtype::kFloat32 ? 1e-6 : 1e-2));
    // The weights moved by about 3 steps of lr 1e-2 (AdamW's step is about lr per element), not by nothing.
    double moved = 0;
    auto p0 = initial.parameters();
    for (size_t i = 0; i < p0.size(); ++i)
      moved = std::max(moved, (adamw.weights[i] - p0[i].to(torch::kFloat)).abs().max().item<double>());
    CHECK(moved > 1e-2);
    CHECK(moved < 0.1);
  }
}

TEST_CASE("update engines refuse a checkpoint written by the other engine", "[train][optim]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto p1 = test::load_tiny();
  auto p2 = test::load_tiny();
  auto adamw = train::make_update_engine(p1, options(config::Dtype::kFloat32, 0), comm);
  auto zero = train::make_update_engine(p2, options(config::Dtype::kFloat32, 1), comm);
  backward(p1);
  adamw->reduce();
  adamw->step(1e-3);
  backward(p2);
  zero->reduce();
  zero->step(1e-3);
  const std::string a = test::fresh_dir("engine_adamw"), z = test::fresh_dir("engine_zero");
  core::ensure_dir(a);
  core::ensure_dir(z);
  adamw->gather_for_save(a + "_staging");
  adamw->save(a);
  zero->gather_for_save(z + "_staging");
  zero->save(z);
  CHECK_THROWS_WITH(zero->load(a), Catch::Contains("was written with distributed.zero_stage 0"));
  CHECK_THROWS_AS(zero->load(a), ConfigError);
  CHECK_THROWS_WITH(adamw->load(z), Catch::Contains("was written with distributed.zero_stage 1"));
  CHECK_NOTHROW(adamw->load(a));
  CHECK_NOTHROW(zero->load(z));
}

TEST_CASE("update engines: state bytes are the AdamW moments: checkpoints see float32 weights", "[train][optim]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto policy = test::load_tiny();
  const int64_t n = policy.num_parameters();
  auto engine = train::make_update_engine(policy, options(config::Dtype::kBFloat16, 0), comm);
  engine->zero_grad();
  backward(policy);
  engine->after_backward();
  engine->reduce();
  engine->step(1e-3);
  CHECK(engine->state_bytes() == 2 * n * 4);  // exp_avg and exp_avg_sq, float32, one copy on one rank
  // bf16 weights (their gradients freed into the masters after each backward), float32 masters, the masters'
  // gradients and moments (both for the parameters the loss reaches: here every one).
  CHECK(engine->model_state_bytes() == n * 2 + n * 4 + n * 4 + engine->state_bytes());
  CHECK(policy.parameters().front().scalar_type() == torch::kBFloat16);
  engine->with_float32_policy([&] { CHECK(policy.parameters().front().scalar_type() == torch::kFloat); });
  CHECK(policy.parameters().front().scalar_type() == torch::kBFloat16);

  auto p2 = test::load_tiny();
  auto zero = train::make_update_engine(p2, options(config::Dtype::kFloat32, 1), comm);
  CHECK(zero->state_bytes() == 2 * n * 4);  // one shard holding every moment
  // float32 weights without gradients yet, every moment, the reduced-gradient shard (the whole of it on one rank)
  CHECK(zero->model_state_bytes() == n * 4 + 2 * n * 4 + n * 4);
}

TEST_CASE("the clip rule: torch's clip_grad_norm_ coefficient, non-finite norms as before", "[train][optim]") {
  config::OptimizerOptions o;
  o.grad_clip = 0;
  CHECK(std::isinf(train::max_grad_norm(o)));
  o.grad_clip = 2.5;
  CHECK(train::max_grad_norm(o) == 2.5);
  CHECK(train::clip_scale(4.0, 1.0) == 1.0 / (4.0 + 1e-6));
  CHECK(train::clip_scale(0.5, 1.0) == 1.0);
  CHECK(train::clip_scale(4.0, INFINITY) == 1.0);
  CHECK(train::clip_scale(INFINITY, 1.0) == 0.0);
  CHECK(train::clip_scale(NAN, 1.0) == 1.0);
  CHECK(train::clip_scale(INFINITY, INFINITY) == 1.0);
}

TEST_CASE("update engines: optimizer.state_bits 8 steps close to float32 moments, counts 2 bytes a parameter, resumes "
          "bit for bit and refuses a checkpoint of the other state_bits", "[train][optim][adamw8bit]") {
  parallel::Comm comm(parallel::LaunchEnv{}, config::DistributedOptions{}, c10::kCPU);
  auto steps = [&](model::Policy& policy, train::UpdateEngine& engine, int n) {
    for (int i = 0; i < n; ++i) {
      engine.zero_grad();
      backward(policy);
      engine.after_backward();
      engine.reduce();
      engine.step(1e-2);
    }
  };
  auto o8 = options(config::Dtype::kFloat32, 0);
  o8.optimizer.state_bits = 8;
  auto p8 = test::load_tiny(), p32 = test::load_tiny(), p0 = test::load_tiny();
  auto e8 = train::make_update_engine(p8, o8, comm);
  auto e32 = train::make_update_engine(p32, options(config::Dtype::kFloat32, 0), comm);
  steps(p8, *e8, 3);
  steps(p32, *e32, 3);
  int64_t expect = 0, quantized = 0;
  double moved = 0, apart = 0;
  const auto w8 = p8.parameters(), w32 = p32.parameters(), w0 = p0.parameters();
  for (size_t i = 0; i < w8.size(); ++i) {
    const int64_t n = w8[i].numel();
    quantized += n >= 4096 ? n : 0;
    expect += n >= 4096 ? 2 * n + 8 * ((n + 255) / 256) : 8 * n;
    moved = std::max(moved, (w32[i] - w0[i]).abs().max().item<double>());
    apart = std::max(apart, (w8[i] - w32[i]).abs().max().item<double>());
  }
  INFO("moved " << moved << ", 8-bit from float32 moments " << apart << "; " << quantized << " parameters in 8 bits");
  CHECK(quantized > p8.num_parameters() / 2);  // the embedding and the projections; the norms stay float32
  CHECK(e8->state_bytes() == expect);
  CHECK(apart > 0);
  // Adam's first steps are sign-like, and 8-bit codes keep each moment within a few per cent of its block's absmax:
  // after 3 steps of lr 1e-2 the weights stay within 10% of their movement of float32 AdamW's
  CHECK(apart < 0.1 * moved);

  const std::string dir = test::fresh_dir("engine_8bit"), dir32 = test::fresh_dir("engine_32bit");
  core::ensure_dir(dir);
  core::ensure_dir(dir32);
  e8->save(dir);
  e32->save(dir32);
  CHECK(core::exists(dir + "/optimizer_8bit.pt"));
  CHECK_THROWS_WITH(e32->load(dir), Catch::Contains("optimizer.state_bits 8; resume it with state_bits 8"));
  CHECK_THROWS_WITH(e8->load(dir32), Catch::Contains("optimizer.state_bits 32; resume it with state_bits 32"));
  CHECK_THROWS_AS(e8->load(dir32), ConfigError);
  // a resumed engine (the weights as the checkpoint holds them) takes the same steps as the one that went on
  auto resumed = test::load_tiny();
  const auto wr = resumed.parameters();
  {
    torch::NoGradGuard g;
    for (size_t i = 0; i < wr.size(); ++i) wr[i].detach().copy_(w8[i]);
  }
  auto er = train::make_update_engine(resumed, o8, comm);
  er->load(dir);
  steps(p8, *e8, 2);
  steps(resumed, *er, 2);
  for (size_t i = 0; i < wr.size(); ++i) CHECK(torch::equal(wr[i], w8[i]));

  auto bf16 = options(config::Dtype::kBFloat16, 0);
  bf16.optimizer.state_bits = 8;
  auto pb = test::load_tiny();
  auto eb = train::make_update_engine(pb, bf16, comm);
  steps(pb, *eb, 1);  // float32 masters under 8-bit moments
  CHECK(eb->state_bytes() == expect);
  auto z1 = options(config::Dtype::kFloat32, 1);
  z1.optimizer.state_bits = 8;
  auto pz = test::load_tiny();
  auto ez = train::make_update_engine(pz, z1, comm);  // ZeRO-1: the flat vector in 8 bits, padded to whole blocks
  steps(pz, *ez, 1);
  int64_t n = 0;
  for (const auto& p : pz.parameters()) n += p.numel();
  const int64_t padded = (n + 255) / 256 * 256;
  CHECK(ez->state_bytes() == 2 * padded + 2 * 4 * (padded / 256));
}
