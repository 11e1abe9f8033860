// bitsandbytes' 8-bit AdamW (optimizer.state_bits 8; Dettmers et al., "8-bit Optimizers via Block-wise
// Quantization"): both moments of a tensor stored as one byte an element, a code into a 256-entry dynamic map (signed
// for exp_avg, unsigned for exp_avg_sq), with a float32 absmax per block of 256 elements. Per parameter that is
// 2 bytes + 8 / 256 bytes of absmax = 2.03 bytes instead of float32's 8: Qwen3-8B's 8.19e9 parameters hold 16.6 GB of
// moments instead of 65.5 GB.
//
// The step is bitsandbytes' CUDA kernel kOptimizerStatic8bit2StateBlockwise (ADAM) in torch ops, a chunk of blocks at a
// time: dequantise the chunk's moments, update them and the parameter in float32, re-quantise each block against its
// new absmax (nearest code, quantize_2D; an exp_avg code never changes sign against its value). Only one chunk's
// float32 moments exist at once, never the whole state: kStepChunk elements, about ten 4-byte temporaries of it at the
// peak (160 MiB); Qwen3-8B's step is then ~2,000 chunks of ~35 element-wise kernels.
// Non-goals: paged states, stochastic rounding, the percentile clipping bitsandbytes offers (all off in its AdamW8bit).
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>

#include "gspo/parallel/adamw_step.h"

namespace gspo::parallel {

inline constexpr int64_t kQuantBlock = 256;      // elements per absmax: bitsandbytes' optimizer blocksize
inline constexpr int64_t kMin8bitSize = 4096;    // bitsandbytes' min_8bit_size: smaller tensors keep float32 moments
inline constexpr int64_t kStepChunk = int64_t{1} << 22;  // elements a step dequantises at once (a multiple of 256)

// bitsandbytes.functional.create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): 256 ascending float32 values
// in [-1, 1] (signed: 127 negative, zero, 128 positive) or [0, 1] (unsigned), on the CPU.
at::Tensor dynamic_map(bool is_signed);

// A dynamic map on a device with its 255 midpoints ((a + b) / 2 of neighbours, float32): what quantising needs.
struct QuantMap {
  at::Tensor values, midpoints;
  bool is_signed = true;
  static QuantMap make(bool is_signed, c10::Device device);
};

// Flat tensor of n elements as uint8 codes [n] and a float32 absmax [ceil(n / 256)].
struct Quantized {
  at::Tensor codes, absmax;
};

// Blockwise quantisation of a flat float32 tensor: per block of 256 (the last may be short) absmax = max |x|, and
// each element the code of the map entry nearest x / absmax (ties: the lower entry; an all-zero block: the code of 0).
// `keep_sign` (exp_avg): a code whose entry's sign bit differs from x's moves one step towards x's side, as
// bitsandbytes' optimizer does (a small negative value never becomes 0).
Quantized quantize_blockwise(const at::Tensor& x, const QuantMap& map, bool keep_sign = false);
// map[codes] * absmax[block]: float32 [n] (bitsandbytes' dequantize_blockwise, blocksize 256).
at::Tensor dequantize_blockwise(const at::Tensor& codes, const at::Tensor& absmax, const QuantMap& map);

// One tensor's AdamW moments in 8 bits; all zeros (codes 0, absmax 0) before the first step, as bitsandbytes starts.
struct Moments8bit {
  at::Tensor m_codes, m_absmax, v_codes, v_absmax;
  static Moments8bit zeros(int64_t numel, const at::TensorOptions& like);
  int64_t bytes() const;
};

// The 8-bit tensor's dynamic maps: signed for exp_avg, unsigned for exp_avg_sq.
struct Maps8bit {
  QuantMap m, v;
  static Maps8bit make(c10::Device device) { return {QuantMap::make(true, device), QuantMap::make(false, device)}; }
};

// One step (step counts from 1) of bitsandbytes' 8-bit blockwise AdamW on a flat float32 parameter `p` (updated in
// place) with its gradient, `chunk` elements (a multiple of 256) at a time, in the kernel's order:
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  c1 = 1 - b1^t;  c2 = sqrt(1 - b2^t)
//   p = (p - lr c2 / c1 * m / (sqrt(v) + c2 eps)) * (1 - lr wd)      (decoupled decay after the update)
// and the moments re-quantised per block. c1, c2 and the step size in float32, as the kernel computes them.
// `active` (bool [n], optional; the sharded optimizers' mask of parameters no rank has a gradient for): an inactive
// element keeps its parameter and its moment's value (re-quantised with its block), a block with no active element
// keeps its codes and absmax bit for bit.
void adamw8bit_step(at::Tensor& p, const at::Tensor& grad, Moments8bit& s, const Maps8bit& maps, double lr,
                    int64_t step, const AdamWHyper& h, int64_t chunk = kStepChunk, const at::Tensor& active = {});

}  // namespace gspo::parallel
