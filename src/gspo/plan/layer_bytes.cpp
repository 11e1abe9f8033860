// gspo plan's per-token activation bytes of one decoder layer (declared in plan/memory.h).
#include "gspo/plan/memory.h"

namespace gspo::plan {

// Per token of one decoder layer, what autograd keeps for backward (scripts/gspo_model.py's Block, read op by op):
//   each RMSNorm: its float32 input copy (4H) and its normalised output in the weights' dtype (H): 2 norms;
//   the q/k/v projections' shared input (H); Qwen3's q/k norms the same over Q + K; RoPE keeps nothing large
//   (cos/sin are constants); SDPA keeps q, k, v, its output (2Q + 2K) and a float32 logsumexp per head; o_proj
//   its (copied) input (Q);
//   dense MLP: its input (H), gate and up outputs, silu's output, their product (4I);
//   MoE MLP: the router's input (H) and float32 softmax (4E); per routed copy (top-k of them) the expert's input (H),
//   its 4 intermediate tensors (4 I_moe) and its output kept for the gating product (H).
double layer_saved_bytes_per_token(const ModelShape& s, int64_t layer, double b) {
  const double H = s.hidden_size, Q = s.num_heads * s.head_dim, K = s.num_kv_heads * s.head_dim;
  double n = 2 * (4 * H + b * H) + b * H;              // two norms, the qkv input
  if (s.qk_norm) n += (4 + b) * (Q + K);
  n += b * (2 * Q + 2 * K) + 4.0 * s.num_heads + b * Q;  // SDPA, o_proj input
  if (s.is_moe_layer(layer)) {
    n += b * H + 4.0 * s.num_experts;
    n += s.experts_per_token * b * (2 * H + 4.0 * s.moe_intermediate_size);
  } else {
    n += b * (H + 4.0 * s.intermediate_size);
  }
  return n;
}

// Without autograd a layer's forward holds, at its widest (the MLP): its input and the residual output (2H), the
// norm's float32 copy (4H), and gate, up and their product (3I) -- or, in an MoE layer, the router's float32 softmax
// (4E), the accumulated output (H) and one expert's 3 intermediates over at most every token (3 I_moe).
double layer_nograd_bytes_per_token(const ModelShape& s, int64_t layer, double b) {
  const double H = s.hidden_size;
  double n = 2 * b * H + 4 * H;
  if (s.is_moe_layer(layer)) n += 4.0 * s.num_experts + b * H + 3 * b * s.moe_intermediate_size;
  else n += 3 * b * s.intermediate_size;
  return n;
}

}  // namespace gspo::plan
