#include "gspo/core/cpu_bf16.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>

namespace gspo::core {
namespace {

// A linear layer's three products, forward and backward: y = x W^T, dx = dy W, dW = dy^T x.
double best_seconds(c10::ScalarType dtype, int runs) {
  torch::NoGradGuard g;
  const auto o = torch::TensorOptions().dtype(dtype);
  auto x = torch::randn({64, 512}, o), w = torch::randn({1024, 512}, o), dy = torch::randn({64, 1024}, o);
  auto once = [&] {
    auto y = torch::mm(x, w.t());
    auto dx = torch::mm(dy, w);
    auto dw = torch::mm(dy.t(), x);
  };
  once();  // warm-up: kernels chosen, buffers allocated
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    once();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

double cpu_bf16_matmul_slowdown() {
  const double f32 = best_seconds(torch::kFloat, 5);
  const double bf16 = best_seconds(torch::kBFloat16, 3);
  return f32 > 0 ? bf16 / f32 : 1.0;
}

}  // namespace gspo::core
