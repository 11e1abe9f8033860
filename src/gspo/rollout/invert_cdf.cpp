#include "gspo/rollout/invert_cdf.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <vector>

namespace gspo::rollout {

namespace {

constexpr int64_t kBlock = 8;

// Sum of p[0..n) (n <= kBlock) in float64, pairwise: independent of the running sum, so the loop over blocks has one
// dependent add per block.
inline double block_sum(const float* p, int64_t n) {
  if (n == kBlock) {
    const double a = (static_cast<double>(p[0]) + p[1]) + (static_cast<double>(p[2]) + p[3]);
    const double b = (static_cast<double>(p[4]) + p[5]) + (static_cast<double>(p[6]) + p[7]);
    return a + b;
  }
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += p[i];
  return s;
}

// The row's token for target x, or -1 when the running sum never exceeds x (x rounded up to the total).
int64_t draw_row(const float* p, int64_t V, double u) {
  double total = 0;
  for (int64_t j = 0; j < V; j += kBlock) total += block_sum(p + j, std::min(kBlock, V - j));
  const double x = u * total;
  double acc = 0;
  for (int64_t j = 0; j < V; j += kBlock) {
    const int64_t n = std::min(kBlock, V - j);
    const double s = block_sum(p + j, n);
    if (acc + s > x) {
      // The crossing is inside this block. Element sums round differently from the block's pairwise sum: if they
      // never pass x, the block's last token of positive probability is the one the block sum crossed on.
      double a = acc;
      int64_t last_positive = -1;
      for (int64_t i = 0; i < n; ++i) {
        if (p[j + i] > 0) last_positive = j + i;
        a += p[j + i];
        if (a > x && p[j + i] > 0) return j + i;
      }
      return last_positive;
    }
    acc += s;
  }
  return -1;
}

}  // namespace

at::Tensor invert_cdf_cpu(const at::Tensor& probs, const at::Tensor& uniforms) {
  TORCH_CHECK(probs.dim() == 2 && probs.scalar_type() == at::kFloat && probs.device().is_cpu(),
              "invert_cdf_cpu: probs must be [N, V] float32 on the CPU");
  auto p = probs.contiguous();
  auto u = uniforms.to(torch::kCPU, torch::kDouble).contiguous();
  const int64_t N = p.size(0), V = p.size(1);
  TORCH_CHECK(u.numel() == N, "invert_cdf_cpu: ", u.numel(), " uniforms for ", N, " rows");
  auto out = torch::empty({N}, torch::kLong);
  const float* pp = p.data_ptr<float>();
  const double* up = u.data_ptr<double>();
  int64_t* op = out.data_ptr<int64_t>();
  at::parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) op[r] = draw_row(pp + r * V, V, up[r]);
  });
  for (int64_t r = 0; r < N; ++r)
    if (op[r] < 0) op[r] = p[r].argmax().item<int64_t>();
  return out;
}

}  // namespace gspo::rollout
