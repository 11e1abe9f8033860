#include "gspo/parallel/adamw8bit.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace gspo::parallel {
namespace {

int64_t blocks_of(int64_t n) { return (n + kQuantBlock - 1) / kQuantBlock; }

// `x` [n] zero-padded to whole blocks and viewed as [blocks, 256].
at::Tensor as_blocks(const at::Tensor& x) {
  const int64_t n = x.numel(), pad = blocks_of(n) * kQuantBlock - n;
  auto flat = x.reshape({-1});
  return (pad > 0 ? torch::constant_pad_nd(flat, {0, pad}) : flat).view({-1, kQuantBlock});
}

}  // namespace

// The ascending list create_dynamic_map builds: per exponent i the means of a linspace(0.1, 1) of 2^i (signed) or
// 2^(i+1) (unsigned) intervals, scaled by 10^(i - 6), negated copies when signed; then 0 and 1. The float32 ops are
// torch's, as in bitsandbytes (linspace, the means, the product with a double scalar).
at::Tensor dynamic_map(bool is_signed) {
  constexpr int kMaxExponentBits = 7, kNonSignBits = 7;
  std::vector<float> data;
  for (int i = 0; i < kMaxExponentBits; ++i) {
    const int64_t items = (int64_t{1} << (i + kNonSignBits - kMaxExponentBits + (is_signed ? 0 : 1))) + 1;
    auto bounds = torch::linspace(0.1, 1, items, torch::kFloat);
    auto means = (bounds.narrow(0, 0, items - 1) + bounds.narrow(0, 1, items - 1)) / 2.0;
    const double scale = std::pow(10.0, -(kMaxExponentBits - 1) + i);
    for (const auto& part : {means * scale, means * -scale}) {
      const auto* v = part.const_data_ptr<float>();
      data.insert(data.end(), v, v + part.numel());
      if (!is_signed) break;
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  if (data.size() != 256) throw std::logic_error("dynamic_map: " + std::to_string(data.size()) + " values, not 256");
  std::sort(data.begin(), data.end());
  return torch::tensor(data, torch::kFloat);
}

QuantMap QuantMap::make(bool is_signed, c10::Device device) {
  auto values = dynamic_map(is_signed).to(device);
  auto midpoints = (values.narrow(0, 0, 255) + values.narrow(0, 1, 255)) * 0.5;
  return {values, midpoints, is_signed};
}

Quantized quantize_blockwise(const at::Tensor& x, const QuantMap& map, bool keep_sign) {
  torch::NoGradGuard g;
  const int64_t n = x.numel();
  auto blocks = as_blocks(x);
  auto absmax = blocks.abs().amax(1);
  auto scale = torch::where(absmax > 0, absmax, torch::ones_like(absmax));
  auto normed = (blocks / scale.unsqueeze(1)).view({-1}).narrow(0, 0, n);
  // nearest entry: the first midpoint at or above the value (right=false: a tie goes to the lower entry)
  auto codes = torch::bucketize(normed, map.midpoints, /*out_int32=*/true, /*right=*/false);
  if (keep_sign) {
    auto flip = torch::signbit(map.values.index_select(0, codes)) != torch::signbit(normed);
    codes = codes + flip.to(torch::kInt) * torch::where(normed > 0, 1, -1).to(torch::kInt);
  }
  return {codes.to(torch::kUInt8), absmax};
}

at::Tensor dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax, const QuantMap& map) {
  torch::NoGradGuard g;
  const int64_t n = codes.numel();
  auto values = map.values.index_select(0, codes.reshape({-1}).to(torch::kInt));
  return (as_blocks(values) * absmax.unsqueeze(1)).view({-1}).narrow(0, 0, n);
}

Moments8bit Moments8bit::zeros(int64_t numel, const at::TensorOptions& like) {
  auto codes = like.dtype(torch::kUInt8);
  auto absmax = like.dtype(torch::kFloat);
  return {torch::zeros({numel}, codes), torch::zeros({blocks_of(numel)}, absmax), torch::zeros({numel}, codes),
          torch::zeros({blocks_of(numel)}, absmax)};
}

int64_t Moments8bit::bytes() const {
  return static_cast<int64_t>(m_codes.nbytes() + m_absmax.nbytes() + v_codes.nbytes() + v_absmax.nbytes());
}

void adamw8bit_step(at::Tensor& p, const at::Tensor& grad, Moments8bit& s, const Maps8bit& maps, double lr,
                    int64_t step, const AdamWHyper& h, int64_t chunk, const at::Tensor& active) {
  torch::NoGradGuard no_grad;
  if (chunk <= 0 || chunk % kQuantBlock != 0)
    throw std::invalid_argument("adamw8bit_step: chunk " + std::to_string(chunk) + " is not a multiple of 256");
  const int64_t n = p.numel();
  if (grad.numel() != n || s.m_codes.numel() != n || (active.defined() && active.numel() != n))
    throw std::invalid_argument("adamw8bit_step: parameter, gradient and moments differ in size");
  // the kernel's scalars, float32
  const float b1 = static_cast<float>(h.beta1), b2 = static_cast<float>(h.beta2);
  const float c1 = 1.0f - std::pow(b1, static_cast<float>(step));
  const float c2 = std::sqrt(1.0f - std::pow(b2, static_cast<float>(step)));
  const float step_size = -static_cast<float>(lr) * c2 / c1;
  const float eps_c2 = c2 * static_cast<float>(h.eps);
  const float decay = 1.0f - static_cast<float>(lr) * static_cast<float>(h.weight_decay);
  auto pf = p.view({-1});
  auto gf = grad.reshape({-1});
  for (int64_t e0 = 0; e0 < n; e0 += chunk) {
    const int64_t len = std::min(chunk, n - e0), b0 = e0 / kQuantBlock, nb = blocks_of(len);
    auto g = gf.narrow(0, e0, len);
    auto m_codes = s.m_codes.narrow(0, e0, len), v_codes = s.v_codes.narrow(0, e0, len);
    auto m_absmax = s.m_absmax.narrow(0, b0, nb), v_absmax = s.v_absmax.narrow(0, b0, nb);
    auto m = dequantize_blockwise(m_codes, m_absmax, maps.m);
    auto v = dequantize_blockwise(v_codes, v_absmax, maps.v);
    auto pc = pf.narrow(0, e0, len);
    // A chunk whose elements are all active (every parameter with a gradient: the usual case) steps unmasked: the mask
    // would change nothing, and costs three float32 copies of the chunk and three selects.
    auto a = active.defined() ? active.narrow(0, e0, len) : at::Tensor();
    if (a.defined() && a.all().item<bool>()) a = at::Tensor();
    const auto m0 = a.defined() ? m.clone() : at::Tensor(), v0 = a.defined() ? v.clone() : at::Tensor();
    const auto p0 = a.defined() ? pc.clone() : at::Tensor();
    m.mul_(b1).add_(g, 1.0f - b1);
    v.mul_(b2).addcmul_(g, g, 1.0f - b2);
    pc.addcdiv_(m, v.sqrt().add_(eps_c2), step_size);
    if (h.weight_decay > 0) pc.mul_(decay);
    if (a.defined()) {  // inactive elements keep their parameter and moments
      pc.copy_(torch::where(a, pc, p0));
      m = torch::where(a, m, m0);
      v = torch::where(a, v, v0);
    }
    auto qm = quantize_blockwise(m, maps.m, /*keep_sign=*/true);
    auto qv = quantize_blockwise(v, maps.v);
    if (a.defined()) {  // a block without an active element keeps its codes and absmax bit for bit
      auto live = as_blocks(a.to(torch::kFloat)).amax(1) > 0;
      auto each = live.repeat_interleave(kQuantBlock).narrow(0, 0, len);
      qm = {torch::where(each, qm.codes, m_codes), torch::where(live, qm.absmax, m_absmax)};
      qv = {torch::where(each, qv.codes, v_codes), torch::where(live, qv.absmax, v_absmax)};
    }
    m_codes.copy_(qm.codes);
    m_absmax.copy_(qm.absmax);
    v_codes.copy_(qv.codes);
    v_absmax.copy_(qv.absmax);
  }
}

}  // namespace gspo::parallel
