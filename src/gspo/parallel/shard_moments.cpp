#include "gspo/parallel/shard_moments.h"

#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gspo/parallel/adamw8bit.h"

namespace gspo::parallel {
namespace {

class Float32Moments final : public ShardMoments {
 public:
  Float32Moments(int64_t n, const at::TensorOptions& like)
      : m_(torch::zeros({n}, like.dtype(torch::kFloat))), v_(torch::zeros({n}, like.dtype(torch::kFloat))) {}
  void step_range(at::Tensor& p, const at::Tensor& grad, const at::Tensor& active, double lr, int64_t step,
                  const AdamWHyper& h, int64_t offset) override {
    auto m = m_.narrow(0, offset, p.numel()), v = v_.narrow(0, offset, p.numel());
    adamw_shard_step(p, m, v, grad, active, lr, step, h);
  }
  std::vector<at::Tensor> tensors() const override { return {m_, v_}; }
  int64_t bits() const override { return 32; }

 private:
  at::Tensor m_, v_;
};

class Blockwise8bitMoments final : public ShardMoments {
 public:
  Blockwise8bitMoments(int64_t n, const at::TensorOptions& like, int64_t real)
      : s_(Moments8bit::zeros(n, like)), maps_(Maps8bit::make(like.device())), real_(real < 0 ? n : std::min(real, n)) {
    zero();
  }
  void zero() override {
    ShardMoments::zero();
    if (real_ == s_.m_codes.numel()) return;
    // the code quantising gives 0.0 (the unsigned map's code 0 is already 0.0 for exp_avg_sq)
    const auto z = torch::bucketize(torch::zeros({1}, maps_.m.midpoints.options()), maps_.m.midpoints, true, false);
    s_.m_codes.narrow(0, real_, s_.m_codes.numel() - real_).fill_(z.item<int>());
  }
  void step_range(at::Tensor& p, const at::Tensor& grad, const at::Tensor& active, double lr, int64_t step,
                  const AdamWHyper& h, int64_t offset) override {
    if (offset % kQuantBlock != 0)
      throw std::invalid_argument("8-bit moments: a step range starting at " + std::to_string(offset) +
                                  " is not on a block boundary");
    const int64_t n = p.numel(), b0 = offset / kQuantBlock, nb = (n + kQuantBlock - 1) / kQuantBlock;
    Moments8bit part{s_.m_codes.narrow(0, offset, n), s_.m_absmax.narrow(0, b0, nb), s_.v_codes.narrow(0, offset, n),
                     s_.v_absmax.narrow(0, b0, nb)};  // views: the step writes through them
    adamw8bit_step(p, grad, part, maps_, lr, step, h, kStepChunk, active);
  }
  std::vector<at::Tensor> tensors() const override { return {s_.m_codes, s_.m_absmax, s_.v_codes, s_.v_absmax}; }
  int64_t bits() const override { return 8; }

 private:
  Moments8bit s_;
  Maps8bit maps_;
  int64_t real_;  // elements before the padding
};

// Either kind in host memory; the step streams the shard through pinned staging buffers a chunk at a time.
class OffloadedMoments final : public ShardMoments {
 public:
  OffloadedMoments(std::unique_ptr<ShardMoments> host, int64_t chunk) : host_(std::move(host)), chunk_(chunk) {}
  void step(at::Tensor& p, const at::Tensor& grad, const at::Tensor& active, double lr, int64_t step,
            const AdamWHyper& h) override {
    torch::NoGradGuard g;
    const int64_t n = p.numel(), c = std::min(chunk_, std::max<int64_t>(n, 1));
    if (!ph_.defined() || ph_.numel() < c) {
      ph_ = torch::empty({c}, host_options(torch::kFloat));
      gh_ = torch::empty({c}, host_options(torch::kFloat));
      ah_ = torch::empty({c}, host_options(torch::kBool));
    }
    for (int64_t e0 = 0; e0 < n; e0 += c) {
      const int64_t len = std::min(c, n - e0);
      auto ph = ph_.narrow(0, 0, len), gh = gh_.narrow(0, 0, len), ah = ah_.narrow(0, 0, len);
      ph.copy_(p.narrow(0, e0, len));  // device to host (a copy on the CPU too: the same path is tested there)
      gh.copy_(grad.narrow(0, e0, len));
      if (active.defined()) ah.copy_(active.narrow(0, e0, len));
      host_->step_range(ph, gh, active.defined() ? ah : at::Tensor(), lr, step, h, e0);
      p.narrow(0, e0, len).copy_(ph);  // host to device
      moved_ += len * (4 + 4 + (active.defined() ? 1 : 0) + 4);
    }
  }
  void step_range(at::Tensor& p, const at::Tensor& grad, const at::Tensor& active, double lr, int64_t step,
                  const AdamWHyper& h, int64_t offset) override {
    host_->step_range(p, grad, active, lr, step, h, offset);
  }
  std::vector<at::Tensor> tensors() const override { return host_->tensors(); }
  void zero() override { host_->zero(); }
  int64_t bits() const override { return host_->bits(); }
  int64_t transferred_bytes() const override { return moved_; }

 private:
  std::unique_ptr<ShardMoments> host_;
  int64_t chunk_;
  at::Tensor ph_, gh_, ah_;  // staging buffers [chunk] (pinned with CUDA)
  int64_t moved_ = 0;
};

}  // namespace

int64_t ShardMoments::bytes() const {
  int64_t n = 0;
  for (const auto& t : tensors()) n += static_cast<int64_t>(t.nbytes());
  return n;
}

void ShardMoments::zero() {
  for (auto t : tensors()) t.zero_();
}

void ShardMoments::copy_from(const std::vector<at::Tensor>& from, int64_t src, int64_t dst, int64_t n) {
  const auto mine = tensors();
  if (from.size() != mine.size()) throw std::invalid_argument("ShardMoments::copy_from: another kind of moments");
  if (n <= 0) return;
  for (size_t k = 0; k < mine.size(); ++k) {
    const int64_t r = per(k);
    if (src % r != 0 || dst % r != 0)
      throw std::invalid_argument("ShardMoments::copy_from: [" + std::to_string(src) + ", +" + std::to_string(n) +
                                  ") is not on a block boundary");
    const int64_t len = (n + r - 1) / r;
    auto t = mine[k];
    t.narrow(0, dst / r, len).copy_(from[k].narrow(0, src / r, len));
  }
}

bool ShardMoments::fits(const std::vector<at::Tensor>& from, int64_t numel) const {
  const auto mine = tensors();
  if (from.size() != mine.size()) return false;
  for (size_t k = 0; k < mine.size(); ++k) {
    const int64_t r = per(k);
    if (from[k].scalar_type() != mine[k].scalar_type() || from[k].numel() != (numel + r - 1) / r) return false;
  }
  return true;
}

at::TensorOptions host_options(c10::ScalarType dtype) {
  return torch::TensorOptions(torch::kCPU).dtype(dtype).pinned_memory(torch::cuda::is_available());
}

std::unique_ptr<ShardMoments> make_shard_moments(int64_t state_bits, int64_t n, const at::TensorOptions& like,
                                                 bool offload, int64_t chunk, int64_t real) {
  if (state_bits != 8 && state_bits != 32)
    throw std::invalid_argument("make_shard_moments: state_bits " + std::to_string(state_bits) + " is not 8 or 32");
  const auto where = offload ? host_options(torch::kFloat) : like;
  std::unique_ptr<ShardMoments> m;
  if (state_bits == 8) m = std::make_unique<Blockwise8bitMoments>(n, where, real);
  else m = std::make_unique<Float32Moments>(n, where);
  if (!offload) return m;
  const int64_t c = chunk > 0 ? chunk : kStepChunk;
  if (c % kQuantBlock != 0)
    throw std::invalid_argument("make_shard_moments: chunk " + std::to_string(c) + " is not a multiple of 256");
  return std::make_unique<OffloadedMoments>(std::move(m), c);
}

int64_t shard_align(int64_t state_bits) { return state_bits == 8 ? kQuantBlock : 1; }

}  // namespace gspo::parallel
