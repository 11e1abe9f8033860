// What a log-prob pass gave (response log-probs, entropy, every parameter's gradient) and the comparison two passes
// of the same rows must pass: float32, 1e-5 absolute on log-probs and entropy (values of order 1-10), 1e-5 relative on
// each parameter's gradient. Shared by the per-layer path's tests (test_layers.cpp) and shared-prefix training's
// (test_shared_prefix.cpp).
#pragma once
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

namespace gspo::test {

// ||a - b|| / max(||b||, tiny): the relative error of a whole gradient tensor.
inline double rel_err(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / std::max(b.norm().item<double>(), 1e-30);
}

struct PassResult {
  torch::Tensor lp, entropy;
  std::vector<torch::Tensor> grads;
  int64_t reads = 0;  // the pass's device-to-host reads
};

inline void check_same(const PassResult& got, const PassResult& want, const std::string& what) {
  INFO(what);
  CHECK((got.lp - want.lp).abs().max().item<double>() < 1e-5);
  CHECK((got.entropy - want.entropy).abs().max().item<double>() < 1e-5);
  REQUIRE(got.grads.size() == want.grads.size());
  double worst = 0;
  for (size_t i = 0; i < got.grads.size(); ++i) worst = std::max(worst, rel_err(got.grads[i], want.grads[i]));
  INFO("largest relative gradient error " << worst);
  CHECK(worst < 1e-5);
}

}  // namespace gspo::test
