// #53 item 4: the update's optimizer step through torch's fused multi-tensor AdamW kernel (train/engines/fused_step.h) takes
// torch::optim::AdamW::step's steps: same weights, moments and step counts after several steps, with weight decay,
// two parameter groups, a parameter without a gradient on some steps (its step count lags, as torch's does) and a
// parameter that joins late, and the state round-trips through the optimizer checkpoint file. Tolerance: 1e-6
// absolute on weights of order 1 (the fused kernel computes the same float32 expressions in another order).
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <ATen/record_function.h>

#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>

#include "gspo/io/checkpoint.h"
#include "gspo/train/engines/fused_step.h"
#include "helpers.h"

using namespace gspo;

namespace {

std::vector<at::Tensor> fresh_params() {
  torch::manual_seed(3);
  return {torch::randn({7, 5}).requires_grad_(), torch::randn({11}).requires_grad_(),
          torch::randn({3, 4, 2}).requires_grad_(), torch::randn({6}).requires_grad_()};
}

std::unique_ptr<torch::optim::AdamW> make_opt(std::vector<at::Tensor>& p) {
  torch::optim::AdamWOptions a(2e-2), b(2e-2);
  a.betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);
  b.betas({0.8, 0.99}).eps(1e-6).weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<at::Tensor>{p[0], p[1]}, std::make_unique<torch::optim::AdamWOptions>(a));
  groups.emplace_back(std::vector<at::Tensor>{p[2], p[3]}, std::make_unique<torch::optim::AdamWOptions>(b));
  return std::make_unique<torch::optim::AdamW>(std::move(groups), a);
}

// Step i's gradients: every parameter, except p[1] on steps 1 and 2 and p[3] before step 3 (no gradient at all).
void set_grads(std::vector<at::Tensor>& p, int i) {
  torch::manual_seed(100 + i);
  for (size_t k = 0; k < p.size(); ++k) {
    auto g = torch::randn(p[k].sizes()) * (1.0 + static_cast<double>(k));
    const bool none = (k == 1 && (i == 1 || i == 2)) || (k == 3 && i < 3);
    p[k].mutable_grad() = none ? at::Tensor() : g;
  }
}

void set_lr(torch::optim::AdamW& opt, double lr) {
  for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
}

const torch::optim::AdamWParamState& state_of(torch::optim::AdamW& opt, const at::Tensor& p) {
  return static_cast<const torch::optim::AdamWParamState&>(*opt.state().at(p.unsafeGetTensorImpl()));
}

}  // namespace

TEST_CASE("fused AdamW takes torch::optim::AdamW's steps, state and checkpoint included", "[train][optim][fused]") {
  auto ref_p = fresh_params(), fused_p = fresh_params();
  auto ref = make_opt(ref_p), fused = make_opt(fused_p);
  const double lrs[] = {2e-2, 1e-2, 3e-2, 5e-3, 2e-2, 1e-2};
  for (int i = 0; i < 6; ++i) {
    set_grads(ref_p, i);
    set_grads(fused_p, i);
    set_lr(*ref, lrs[i]);
    ref->step();
    {
      torch::NoGradGuard g;
      train::fused_adamw_step(*fused, lrs[i]);
    }
  }
  for (size_t k = 0; k < ref_p.size(); ++k) {
    INFO("parameter " << k);
    CHECK((ref_p[k] - fused_p[k]).abs().max().item<double>() < 1e-6);
    CHECK_FALSE(torch::equal(ref_p[k], fresh_params()[k]));  // it moved
    const auto& a = state_of(*ref, ref_p[k]);
    const auto& b = state_of(*fused, fused_p[k]);
    CHECK(a.step() == b.step());
    CHECK((a.exp_avg() - b.exp_avg()).abs().max().item<double>() < 1e-6);
    CHECK((a.exp_avg_sq() - b.exp_avg_sq()).abs().max().item<double>() < 1e-6);
  }
  CHECK(state_of(*fused, fused_p[0]).step() == 6);
  CHECK(state_of(*fused, fused_p[1]).step() == 4);  // no gradient on two steps
  CHECK(state_of(*fused, fused_p[3]).step() == 3);  // joined at step 3

  // The checkpoint: written from the fused optimizer's state, read into torch's, the next step is the same.
  const auto dir = test::fresh_dir("fused_adamw");
  std::filesystem::create_directories(dir);
  io::save_optimizer(dir, *fused);
  auto loaded_p = fresh_params();
  {
    torch::NoGradGuard g;
    for (size_t k = 0; k < loaded_p.size(); ++k) loaded_p[k].copy_(fused_p[k]);
  }
  auto loaded = make_opt(loaded_p);
  io::load_optimizer(dir, *loaded);
  set_grads(loaded_p, 7);
  set_grads(fused_p, 7);
  set_lr(*loaded, 1e-2);
  loaded->step();
  {
    torch::NoGradGuard g;
    train::fused_adamw_step(*fused, 1e-2);
  }
  for (size_t k = 0; k < loaded_p.size(); ++k) CHECK((loaded_p[k] - fused_p[k]).abs().max().item<double>() < 1e-6);
  std::filesystem::remove_all(dir);
}

TEST_CASE("fused AdamW refuses amsgrad", "[train][optim][fused]") {
  auto p = fresh_params();
  torch::optim::AdamW opt(p, torch::optim::AdamWOptions(1e-2).amsgrad(true));
  set_grads(p, 0);
  CHECK_THROWS_WITH(train::fused_adamw_step(opt, 1e-2), Catch::Contains("amsgrad"));
}

// The clip through _foreach_norm / _foreach_mul_: torch::nn::utils::clip_grad_norm_'s norm and scaled gradients (1e-6
// relative), clipping and not, a parameter without a gradient, and a non-finite gradient as torch treats it.
TEST_CASE("fused gradient clipping is clip_grad_norm_", "[train][optim][fused]") {
  for (double max_norm : {0.5, 1e3, static_cast<double>(INFINITY)}) {
    INFO("max_norm " << max_norm);
    auto a = fresh_params(), b = fresh_params();
    set_grads(a, 1);  // p[1] and p[3] have no gradient
    set_grads(b, 1);
    const double want = torch::nn::utils::clip_grad_norm_(a, max_norm);
    const double got = train::clip_grad_norm_fused(b, max_norm);
    CHECK(std::abs(got - want) <= 1e-6 * want);
    for (size_t k = 0; k < a.size(); ++k) {
      REQUIRE(a[k].grad().defined() == b[k].grad().defined());
      if (a[k].grad().defined()) CHECK((a[k].grad() - b[k].grad()).abs().max().item<double>() <= 1e-6);
    }
  }
  auto a = fresh_params(), b = fresh_params();
  set_grads(a, 4);
  set_grads(b, 4);
  a[0].mutable_grad()[0][0] = INFINITY;
  b[0].mutable_grad()[0][0] = INFINITY;
  const double want = torch::nn::utils::clip_grad_norm_(a, 1.0);
  const double got = train::clip_grad_norm_fused(b, 1.0);
  CHECK(std::isinf(want));
  CHECK(std::isinf(got));
  CHECK(torch::equal(a[2].grad(), b[2].grad()));  // scaled by the same coefficient (0)
}

namespace {
std::atomic<int64_t> g_ops{0};
std::map<std::string, int64_t> g_names;
std::unique_ptr<at::ObserverContext> count_op(const at::RecordFunction& fn) {
  ++g_ops;
  ++g_names[fn.name()];
  return nullptr;
}
// The operators `f` dispatches (every nesting level, as the profiler's table counts them).
template <class F>
int64_t ops_of(F&& f) {
  g_ops = 0;
  g_names.clear();
  auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(count_op).scopes({at::RecordScope::FUNCTION}));
  f();
  at::removeCallback(handle);
  return g_ops.load();
}
std::vector<at::Tensor> params_of(int64_t n) {
  std::vector<at::Tensor> p;
  for (int64_t i = 0; i < n; ++i) {
    p.push_back(torch::randn({8, 4}).requires_grad_());
    p.back().mutable_grad() = torch::randn({8, 4});
  }
  return p;
}
}  // namespace

// What #53 item 4 counts on the CPU: the operators one steady update step (clip, then AdamW; the moments exist)
// dispatches. torch's loops dispatch about a dozen a parameter (a 28-layer model has ~310 parameters: one kernel launch
// each on a GPU). The fused step calls _foreach_norm, _foreach_mul_ and _fused_adamw_ once a step, whatever the
// parameter count: one multi-tensor launch each on a GPU. On the CPU those three loop over the tensors inside (the
// per-tensor norms, products and step-count reads still dispatch), so the CPU count grows too, more slowly.
TEST_CASE("the fused update step calls its multi-tensor kernels once, whatever the parameter count",
          "[train][optim][fused]") {
  std::map<int64_t, std::pair<int64_t, int64_t>> counts;  // parameters -> (torch's, fused) operators a step
  for (int64_t n : {4, 40}) {
    auto a = params_of(n);
    std::vector<at::Tensor> b;
    for (auto& t : a) {
      b.push_back(t.detach().clone().requires_grad_());
      b.back().mutable_grad() = t.grad().clone();
    }
    torch::optim::AdamW ref(a, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    torch::optim::AdamW fused(b, torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
    ref.step();  // the moments exist from here: a steady step
    train::fused_adamw_step(fused, 1e-2);
    const int64_t torch_ops = ops_of([&] {
      torch::nn::utils::clip_grad_norm_(a, 1.0);
      ref.step();
    });
    const auto torch_names = g_names;
    const int64_t fused_ops = ops_of([&] {
      train::clip_grad_norm_fused(b, 1.0);
      train::fused_adamw_step(fused, 1e-2);
    });
    counts[n] = {torch_ops, fused_ops};
    std::cout << "steady update step, " << n << " parameters: torch clip_grad_norm_ + AdamW::step " << torch_ops
              << " operators, fused " << fused_ops << " (CPU)\n";
    CHECK(g_names["aten::_fused_adamw_"] == 1);
    CHECK(g_names["aten::_foreach_norm"] == 1);
    CHECK(g_names["aten::_foreach_mul_"] == 1);
    CHECK(g_names["aten::addcdiv_"] == 0);
    CHECK(torch_names.at("aten::addcdiv_") == n);  // torch's: one update kernel a parameter (and a dozen others)
  }
  CHECK(counts[40].first - counts[4].first >= 36 * 10);             // torch's: >= 10 more operators a parameter
  CHECK((counts[40].second - counts[4].second) * 2 < counts[40].first - counts[4].first);  // fused: under half
}
