// Gates that chain (model/param_gate.h): ZeRO-3's gather first, then a gate that transforms the whole weights (the
// seam a merged low-rank adapter needs). Order of the calls, and a transforming gate seen by the layer's compute.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gspo/model/param_gate.h"
#include "gspo/model/policy.h"
#include "helpers.h"

using namespace gspo;

namespace {

// Records every call as "<name>.<call>(<layer>)".
struct Recording : model::ParamGate {
  Recording(std::string n, std::vector<std::string>& log, bool is_whole = true)
      : name(std::move(n)), calls(log), whole_(is_whole) {}
  void acquire(int64_t l) override { calls.push_back(name + ".acquire(" + std::to_string(l) + ")"); }
  void release(int64_t l) override { calls.push_back(name + ".release(" + std::to_string(l) + ")"); }
  void backward_done(int64_t l) override { calls.push_back(name + ".backward_done(" + std::to_string(l) + ")"); }
  void prefetch(int64_t l) override { calls.push_back(name + ".prefetch(" + std::to_string(l) + ")"); }
  bool whole() const override { return whole_; }
  std::string name;
  std::vector<std::string>& calls;
  bool whole_;
};

// Doubles decoder layer `layer`'s parameters while it is held (exact in floating point, so they come back bitwise).
struct Doubling : model::ParamGate {
  Doubling(std::vector<at::Tensor> p, int64_t l) : params(std::move(p)), layer(l) {}
  void acquire(int64_t l) override { scale(l, 2.0); }
  void release(int64_t l) override { scale(l, 0.5); }
  void backward_done(int64_t) override {}
  bool whole() const override { return true; }
  void scale(int64_t l, double f) {
    if (l != layer) return;
    torch::NoGradGuard g;
    for (auto& p : params) p.mul_(f);
  }
  std::vector<at::Tensor> params;
  int64_t layer;
};

}  // namespace

TEST_CASE("a gate chain acquires first to last and releases and reports backward last to first", "[model][gates]") {
  std::vector<std::string> calls;
  Recording a("zero3", calls), b("adapter", calls, false);
  model::GateChain chain;
  chain.add(&a);
  chain.add(&b);
  chain.acquire(3);
  chain.prefetch(4);
  chain.backward_done(3);
  chain.release(3);
  CHECK(calls == std::vector<std::string>{"zero3.acquire(3)", "adapter.acquire(3)", "zero3.prefetch(4)",
                                          "adapter.prefetch(4)", "adapter.backward_done(3)", "zero3.backward_done(3)",
                                          "adapter.release(3)", "zero3.release(3)"});
  CHECK_FALSE(chain.whole());  // whole only when every gate is
  chain.remove(&b);
  CHECK(chain.whole());
  CHECK(chain.size() == 1);
  chain.remove(&b);  // not in the chain: nothing
  CHECK(chain.size() == 1);
}

TEST_CASE("through the policy: a later gate transforms the weights the first one holds, and gives them back",
          "[model][gates]") {
  auto policy = test::load_tiny("tiny.pt");
  auto doubled = test::load_tiny("tiny.pt");
  REQUIRE(policy.has_layers());
  const auto units = policy.parameter_units();
  std::vector<at::Tensor> before;
  for (const auto& p : units[1]) before.push_back(p.detach().clone());
  {
    torch::NoGradGuard g;
    const auto doubled_units = doubled.parameter_units();
    for (const auto& p : doubled_units[1]) p.mul_(2.0);  // layer 0 doubled by hand
  }
  std::vector<std::string> calls;
  Recording first("zero3", calls);
  Doubling second(units[1], 0);
  policy.add_gate(&first);
  policy.add_gate(&second);

  torch::manual_seed(3);
  const auto ids = torch::randint(policy.manifest().vocab_size, {2, 6});
  const auto mask = torch::ones({2, 6}, torch::kLong);
  at::Tensor got, want;
  {
    torch::NoGradGuard g;
    const auto ctx = policy.layer_context(mask);
    got = policy.layer(0, policy.embed(ids), ctx, false);
    const auto dctx = doubled.layer_context(mask);
    want = doubled.layer(0, doubled.embed(ids), dctx, false);
  }
  // Same weights, same shapes and code path: bitwise.
  CHECK(torch::equal(got, want));
  CHECK(calls.front() == "zero3.acquire(0)");
  CHECK(calls.back() == "zero3.release(0)");
  for (size_t i = 0; i < before.size(); ++i) CHECK(torch::equal(units[1][i], before[i]));  // given back exactly

  // A checkpointed layer's backward re-acquires through the chain and reports backward_done last to first.
  calls.clear();
  auto x = policy.embed(ids).detach().requires_grad_(true);
  policy.layer(0, x, policy.layer_context(mask), true).sum().backward();
  CHECK(std::find(calls.begin(), calls.end(), "zero3.backward_done(0)") != calls.end());
  CHECK(x.grad().defined());

  // A gate that is not whole keeps the whole-model methods from running.
  Recording apart("apart", calls, false);
  policy.add_gate(&apart);
  CHECK_THROWS_WITH(policy.logits(ids, mask), Catch::Contains("needs the whole model"));
  policy.remove_gate(&apart);
  policy.remove_gate(&second);
  policy.remove_gate(&first);
  CHECK_NOTHROW(policy.logits(ids, mask));
}
