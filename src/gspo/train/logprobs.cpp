#include "gspo/train/logprobs.h"

#include <torch/torch.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/train/head_logprobs.h"
#include "gspo/train/shared_prefix.h"

namespace gspo::train {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// Rows of the batch per chunk so a chunk holds about `chunk_tokens` positions (at least one row).
int64_t rows_per_chunk(int64_t n, int64_t R, int64_t chunk_tokens) {
  if (chunk_tokens <= 0) return n;
  return std::max<int64_t>(1, std::min<int64_t>(n, chunk_tokens / std::max<int64_t>(1, R)));
}

// log_softmax(pred / T)[target] for pred [n, R, V] of any floating dtype, in float32, a chunk of rows at a time.
// Forward keeps only the [n, R] log-sum-exp; backward recomputes each chunk's softmax, so no float32 [n, R, V]
// tensor ever exists (only one chunk's worth), and the gradient comes back in pred's dtype.
struct ChunkedLogprob : torch::autograd::Function<ChunkedLogprob> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& pred, const at::Tensor& targets, double T,
                            int64_t chunk_tokens) {
    const int64_t n = pred.size(0), R = pred.size(1);
    const auto many = targets.dim() == 2 ? targets.unsqueeze(-1) : targets;  // [n, R, K]
    auto lse = torch::empty({n, R}, pred.options().dtype(torch::kFloat));
    auto picked = torch::empty(many.sizes(), lse.options());
    const int64_t step = rows_per_chunk(n, R, chunk_tokens);
    for (int64_t i = 0; i < n; i += step) {
      const int64_t c = std::min(step, n - i);
      auto x = pred.narrow(0, i, c).to(torch::kFloat);
      if (T != 1.0) x = x / T;
      lse.narrow(0, i, c).copy_(x.logsumexp(-1));
      picked.narrow(0, i, c).copy_(x.gather(-1, many.narrow(0, i, c)));
    }
    ctx->save_for_backward({pred, targets, lse});
    ctx->saved_data["T"] = T;
    ctx->saved_data["step"] = step;
    auto out = picked - lse.unsqueeze(-1);
    return targets.dim() == 2 ? out.squeeze(-1) : out;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto& pred = saved[0];
    const auto& targets = saved[1];
    const auto& lse = saved[2];
    const double T = ctx->saved_data["T"].toDouble();
    const int64_t step = ctx->saved_data["step"].toInt();
    const auto many = targets.dim() == 2 ? targets.unsqueeze(-1) : targets;
    auto g = grads[0].to(torch::kFloat);
    if (g.dim() == 2) g = g.unsqueeze(-1);                             // [n, R, K]
    auto out = torch::empty_like(pred);
    const int64_t n = pred.size(0);
    for (int64_t i = 0; i < n; i += step) {
      const int64_t c = std::min(step, n - i);
      auto x = pred.narrow(0, i, c).to(torch::kFloat);
      if (T != 1.0) x = x / T;
      auto gi = g.narrow(0, i, c);                                                         // [c, R, K]
      auto d = (x - lse.narrow(0, i, c).unsqueeze(-1)).exp_().mul_(-gi.sum(-1, true));  // -softmax * sum g
      d.scatter_add_(-1, many.narrow(0, i, c), gi);                                        // + onehot * g
      if (T != 1.0) d.div_(T);
      out.narrow(0, i, c).copy_(d);
    }
    return {out, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor token_logprobs(const at::Tensor& pred, const at::Tensor& targets, double temperature, int64_t chunk_tokens) {
  return ChunkedLogprob::apply(pred, targets, temperature, chunk_tokens);
}

at::Tensor token_entropy(const at::Tensor& pred, double temperature, int64_t chunk_tokens) {
  torch::NoGradGuard g;
  const int64_t n = pred.size(0), R = pred.size(1);
  auto out = torch::empty({n, R}, pred.options().dtype(torch::kFloat));
  const int64_t step = rows_per_chunk(n, R, chunk_tokens);
  for (int64_t i = 0; i < n; i += step) {
    const int64_t c = std::min(step, n - i);
    auto x = pred.narrow(0, i, c).to(torch::kFloat);
    if (temperature != 1.0) x = x / temperature;
    auto lse = x.logsumexp(-1, /*keepdim=*/true);
    auto p = (x - lse).exp_();
    out.narrow(0, i, c).copy_(lse.squeeze(-1) - (p * x).sum(-1));
  }
  return out;
}

namespace {

// Rows of `ids`/`mask` [n, P + R] moved left by their prompt's left padding, so each row's real tokens form a prefix
// (the model then runs causal attention with no mask tensor), trimmed to the longest row. Positions come from the
// mask's cumsum, so the logits do not change. `starts` [n]: the column where each row's response begins.
struct RightAligned {
  at::Tensor ids, mask, starts;
};

// `width`: the most real tokens of a row when the caller knows it (0: read from the device).
RightAligned right_align(const at::Tensor& ids, const at::Tensor& mask, int64_t P, int64_t width = 0) {
  const int64_t T = ids.size(1);
  auto shift = P - mask.narrow(1, 0, P).sum(1);                               // [n] left padding per row
  auto col = torch::arange(T, ids.options()).unsqueeze(0) + shift.unsqueeze(1);  // source column of each column
  auto inside = col < T;
  auto src = col.clamp_max(T - 1);
  RightAligned r;
  r.mask = mask.gather(1, src) * inside;
  if (width <= 0) width = std::max<int64_t>(1, r.mask.sum(1).max().item<int64_t>());
  r.mask = r.mask.narrow(1, 0, width).contiguous();
  r.ids = ids.gather(1, src).narrow(1, 0, width).contiguous();
  r.starts = P - shift;
  return r;
}

void require_routing(const model::Policy& policy) {
  if (!policy.has_routing())
    throw Error("'" + policy.path() + "' has no routing methods (route_api) to record or replay MoE routing with");
}

// The shared-prefix layout of `a` by known.prompt_group (shared_prefix.h): `split` (whole groups, for
// Policy::shared_layer) or packed rows (whole groups first cut by share_groups), its prompts checked. 1 device read
// when the shape carries the rows' lengths, else 2.
PackedRows packed_rows(const RightAligned& a, const KnownShape& known, bool split) {
  const auto n = static_cast<size_t>(a.ids.size(0));
  if (known.prompt_group.size() != n)
    throw std::invalid_argument("shared prefix: " + std::to_string(known.prompt_group.size()) + " group ids for " +
                                std::to_string(n) + " rows");
  std::vector<int64_t> plen = known.prompt_len, rlen = known.response_len;
  if (plen.size() != n || rlen.size() != n) {
    const auto lengths = torch::stack({a.starts, a.mask.sum(1) - a.starts}, 1).cpu();  // [n, 2]: prompt, response
    const auto acc = lengths.accessor<int64_t, 2>();
    plen.resize(n), rlen.resize(n);
    for (size_t r = 0; r < n; ++r) plen[r] = acc[static_cast<int64_t>(r)][0], rlen[r] = acc[static_cast<int64_t>(r)][1];
  }
  const int64_t W = a.ids.size(1);
  const auto& group = known.prompt_group;
  auto packed = split ? pack_whole(group, plen, rlen, W, a.ids.device())
                      : pack_rows(known.whole_groups ? share_groups(group, plen, rlen) : group, plen, rlen, W,
                                  a.ids.device());
  check_shared_prompts(packed, a.ids, plen);
  return packed;
}

// A recording pass's start: every layer's slot empty, the response positions marked (right-aligned layout).
void begin_record(model::Policy& policy, const RightAligned& a, RouteIO routes) {
  if (!routes.record) return;
  routes.record->experts.assign(policy.num_layers(), at::Tensor());
  auto col = torch::arange(a.ids.size(1), a.ids.options()).unsqueeze(0);
  routes.record->response = (col >= a.starts.unsqueeze(1)) & (a.mask > 0);
}

// Layer i's experts into a recording pass's record: the replayed ones when the layer replayed (`replay` defined),
// else `chosen` (right-aligned; empty for a dense layer: nothing kept).
void keep_experts(RouteIO routes, int64_t i, const at::Tensor& replay, const at::Tensor& chosen) {
  if (!routes.record) return;
  if (replay.defined()) routes.record->experts[i] = routes.replay->experts[i];
  else if (chosen.numel() > 0) routes.record->experts[i] = chosen.to(at::kShort);
}

// The embedded ids and the rotary tables [B, L, D] of the right-aligned rows in `packed`'s layout (padding embeds the
// pad id).
struct PackedInputs {
  at::Tensor x, cos, sin;
};
PackedInputs packed_inputs(model::Policy& policy, const RightAligned& a, const model::LayerContext& ctx,
                           const PackedRows& packed) {
  const auto pad = policy.manifest().pad_token_id;
  return {policy.embed(to_packed(packed, a.ids).masked_fill(packed.segment < 0, pad)),
          to_packed(packed, ctx.cos.squeeze(1)), to_packed(packed, ctx.sin.squeeze(1))};
}

// run_layers over the split layout (PackedRows::split()): every layer through Policy::shared_layer, the prompts
// [K, P, H] and the responses [M, R, H] apart; the flat [1, K P + M R, H] out (PackedRows::predict indexes it).
at::Tensor run_split_layers(model::Policy& policy, const RightAligned& a, bool checkpoint, RouteIO routes,
                            const PackedRows& packed) {
  const auto in = packed_inputs(policy, a, policy.layer_context(a.mask), packed);
  auto [xp, xr] = split_prompts(packed, in.x);
  const auto [cos_p, cos_r] = split_prompts(packed, in.cos);
  const auto [sin_p, sin_r] = split_prompts(packed, in.sin);
  const model::Policy::SharedContext shared{cos_p.unsqueeze(1), sin_p.unsqueeze(1), cos_r.unsqueeze(1),
                                            sin_r.unsqueeze(1), packed.group, packed.prompt_tokens};
  begin_record(policy, a, routes);
  for (int64_t i = 0; i < policy.num_layers(); ++i) {
    const at::Tensor replay = routes.replay ? routes.replay->replay(i) : at::Tensor();
    at::Tensor replay_p, replay_r;
    if (replay.defined()) std::tie(replay_p, replay_r) = split_prompts(packed, to_packed(packed, replay));
    auto y = policy.shared_layer(i, xp, xr, shared, checkpoint, replay_p, replay_r);
    xp = y.xp, xr = y.xr;
    const bool chose = routes.record && !replay.defined() && y.experts_r.numel() > 0;
    keep_experts(routes, i, replay, chose ? to_aligned(packed, join_prompts(y.experts_p, y.experts_r)) : at::Tensor());
  }
  return join_prompts(xp, xr);
}

// embed and the decoder layers over right-aligned rows (checkpointed when asked and grad is on), each run by `runner`;
// MoE layers replay and/or record experts as `routes` says (in the right-aligned layout). With `packed`, over its
// packed rows under the tree mask (shared_prefix.h), the rotary tables the right-aligned rows' own: [B, L, H] out.
at::Tensor run_layers(model::Policy& policy, const RightAligned& a, bool checkpoint, RouteIO routes,
                      LayerRunner& runner, const PackedRows* packed = nullptr) {
  if (packed && packed->split()) return run_split_layers(policy, a, checkpoint, routes, *packed);
  auto ctx = policy.layer_context(a.mask);
  at::Tensor x;
  if (packed) {
    const auto in = packed_inputs(policy, a, ctx, *packed);
    x = in.x;
    ctx = {in.cos.unsqueeze(1), in.sin.unsqueeze(1), tree_mask(*packed)};
  } else {
    x = policy.embed(a.ids);
  }
  begin_record(policy, a, routes);
  for (int64_t i = 0; i < policy.num_layers(); ++i) {
    const at::Tensor replay = routes.replay ? routes.replay->replay(i) : at::Tensor();
    at::Tensor chosen;
    const bool record = routes.record && !replay.defined();
    x = runner.run(policy, i, x, ctx, checkpoint, packed && replay.defined() ? to_packed(*packed, replay) : replay,
                   record ? &chosen : nullptr);
    keep_experts(routes, i, replay, packed && chosen.numel() > 0 ? to_aligned(*packed, chosen) : chosen);
  }
  return x;
}

// The per-layer pass (policy.has_layers()): embed, the decoder layers, then the final norm and the head over the
// real response tokens only. Padded response positions get log-prob 0 and entropy 0 (callers mask them).
TokenLogprobs layered_logprobs(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                               double temperature, Entropy entropy, int64_t chunk_tokens, const LogprobPass& pass,
                               RouteIO routes, const KnownShape& known, const at::Tensor& extra) {
  const int64_t n = ids.size(0), R = ids.size(1) - P;
  auto a = right_align(ids, mask, P, known.width);
  const int64_t W = a.ids.size(1);
  LayerRunner& runner = pass.runner ? *pass.runner : own_layers();
  std::optional<PackedRows> packed;
  if (!known.prompt_group.empty())
    packed.emplace(packed_rows(a, known, known.whole_groups && runner.runs_shared(policy)));
  auto x = run_layers(policy, a, pass.checkpoint, routes, runner, packed ? &*packed : nullptr);
  // Response token j of row r sits at column starts[r] + j and is predicted by the column before it.
  auto real = mask.narrow(1, P, R) > 0;                                    // [n, R]
  auto rc = known.real_index.defined() ? known.real_index : real.nonzero();  // [N, 2] (row, j), row-major
  auto row = rc.select(1, 0), j = rc.select(1, 1);
  at::Tensor hidden;  // [N, H]
  if (packed) {
    hidden = x.reshape({-1, x.size(2)}).index_select(0, packed->predict);
  } else {
    auto pred_col = a.starts.index_select(0, row) + j - 1;
    hidden = x.reshape({n * W, x.size(2)}).index_select(0, row * W + pred_col);
  }
  auto targets = ids.narrow(1, P, R).reshape({-1}).index_select(0, row * R + j);  // [N], same order as rc
  if (extra.defined())  // [N, 1 + k]: the response token, then the extra ids of its position
    targets = torch::cat({targets.unsqueeze(1), extra.reshape({n * R, -1}).index_select(0, row * R + j)}, 1);
  hidden = policy.final_norm(hidden);
  HeadLogprobs head;
  if (pass.chunked_head) {
    head = head_logprobs(hidden, policy.head_weight(), policy.head_bias(), targets, temperature, chunk_tokens);
  } else {  // [N, V] logits whole (what the forward path holds, less the padding), for comparison
    auto logits = at::linear(hidden, policy.head_weight(), policy.head_bias()).unsqueeze(0);
    head.logprobs = token_logprobs(logits, targets.unsqueeze(0), temperature, chunk_tokens).squeeze(0);
    if (entropy == Entropy::kCompute) head.entropy = token_entropy(logits.detach(), temperature, chunk_tokens).squeeze(0);
  }
  auto zeros = torch::zeros({n, R}, x.options().dtype(at::kFloat));
  TokenLogprobs out;
  const bool lengths_known = known.prompt_len.size() == static_cast<size_t>(n);
  out.host_reads = (known.width > 0 ? 0 : 1) + (known.real_index.defined() ? 0 : 1) +
                   (!packed ? 0 : lengths_known ? 1 : 2);
  out.logprobs = zeros.masked_scatter(real, extra.defined() ? head.logprobs.select(1, 0).contiguous() : head.logprobs);
  if (entropy == Entropy::kCompute) out.entropy = zeros.masked_scatter(real, head.entropy);
  if (extra.defined()) {
    const int64_t k = extra.size(2);
    out.extra = torch::zeros({n, R, k}, zeros.options())
                    .masked_scatter(real.unsqueeze(-1).expand({n, R, k}), head.logprobs.narrow(1, 1, k).contiguous());
  }
  return out;
}

}  // namespace

TokenLogprobs response_logprobs(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                                double temperature, Entropy entropy, int64_t chunk_tokens, LogprobPass pass,
                                RouteIO routes, const KnownShape& known, const at::Tensor& extra) {
  const bool routed = routes.replay || routes.record;
  if (routed) require_routing(policy);
  if (pass.runner && pass.runner->needs_layers() && !(policy.has_layers() && pass.layers))
    throw Error("expert parallelism runs the per-layer pass ('" + policy.path() + "', LogprobPass::layers)");
  if ((policy.has_layers() && pass.layers) || routed)
    return layered_logprobs(policy, ids, mask, P, temperature, entropy, chunk_tokens, pass, routes, known, extra);
  const int64_t R = ids.size(1) - P;
  // Position t predicts column t + 1: the response's R tokens are predicted by columns P-1 .. P+R-2, so the
  // lm_head runs from column P-1 (its last column, P+R-1, predicts past the response and is dropped).
  auto pred = policy.logits_from(ids, mask, P - 1).narrow(1, 0, R);  // [n, R, V]
  auto targets = ids.narrow(1, P, R);
  TokenLogprobs out;
  if (extra.defined()) {  // [n, R, 1 + k]: the response token, then its position's extra ids
    auto all = token_logprobs(pred, torch::cat({targets.unsqueeze(-1), extra}, -1), temperature, chunk_tokens);
    out.logprobs = all.select(2, 0);
    out.extra = all.narrow(2, 1, extra.size(2));
  } else {
    out.logprobs = token_logprobs(pred, targets, temperature, chunk_tokens);
  }
  if (entropy == Entropy::kCompute) out.entropy = token_entropy(pred.detach(), temperature, chunk_tokens);
  return out;
}

namespace {

// log_softmax(logits / T) [c, V] (any dtype) -> the targets' log-probs [c] and the top k [c, k].
void pick_topk(const at::Tensor& logits, const at::Tensor& targets, double T, int64_t k, at::Tensor lp,
               at::Tensor top_lp, at::Tensor top_ids) {
  auto x = logits.to(torch::kFloat);
  if (T != 1.0) x = x / T;
  auto l = torch::log_softmax(x, -1);
  lp.copy_(l.gather(-1, targets.unsqueeze(-1)).squeeze(-1));
  auto [v, i] = l.topk(k, -1);
  top_lp.copy_(v);
  top_ids.copy_(i);
}

}  // namespace

TopkLogprobs response_topk(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                           double temperature, int64_t k, int64_t chunk_tokens, LogprobPass pass,
                           const KnownShape& known) {
  torch::NoGradGuard g;
  const int64_t n = ids.size(0), R = ids.size(1) - P;
  auto fopts = ids.options().dtype(torch::kFloat);
  TopkLogprobs out;
  if (!(policy.has_layers() && pass.layers)) {  // the forward path: [n, R, V] logits, a chunk of rows at a time
    auto pred = policy.logits_from(ids, mask, P - 1).narrow(1, 0, R);
    k = std::min(k, pred.size(2));
    out.logprobs = torch::empty({n, R}, fopts);
    out.top_lp = torch::empty({n, R, k}, fopts);
    out.top_ids = torch::empty({n, R, k}, ids.options());
    const int64_t step = rows_per_chunk(n, R, chunk_tokens);
    for (int64_t i = 0; i < n; i += step) {
      const int64_t c = std::min(step, n - i);
      pick_topk(pred.narrow(0, i, c).reshape({c * R, -1}), ids.narrow(1, P, R).narrow(0, i, c).reshape({-1}),
                temperature, k, out.logprobs.narrow(0, i, c).view({c * R}),
                out.top_lp.narrow(0, i, c).view({c * R, k}), out.top_ids.narrow(0, i, c).view({c * R, k}));
    }
    const auto pad = (mask.narrow(1, P, R) == 0).unsqueeze(-1);  // padded positions: 0, id 0
    out.logprobs.masked_fill_(pad.squeeze(-1), 0);
    out.top_lp.masked_fill_(pad, 0);
    out.top_ids.masked_fill_(pad, 0);
    return out;
  }
  auto a = right_align(ids, mask, P, known.width);
  const int64_t W = a.ids.size(1);
  auto x = run_layers(policy, a, false, {}, pass.runner ? *pass.runner : own_layers());
  auto real = mask.narrow(1, P, R) > 0;
  auto rc = known.real_index.defined() ? known.real_index : real.nonzero();
  auto row = rc.select(1, 0), j = rc.select(1, 1);
  auto pred_col = a.starts.index_select(0, row) + j - 1;
  auto hidden = policy.final_norm(x.reshape({n * W, x.size(2)}).index_select(0, row * W + pred_col));
  auto targets = ids.narrow(1, P, R).reshape({-1}).index_select(0, row * R + j);
  const int64_t N = hidden.size(0);
  k = std::min(k, policy.head_weight().size(0));
  auto lp = torch::empty({N}, fopts), top_lp = torch::empty({N, k}, fopts);
  auto top_ids = torch::empty({N, k}, ids.options());
  const int64_t step = chunk_tokens > 0 ? std::max<int64_t>(1, chunk_tokens) : std::max<int64_t>(1, N);
  for (int64_t i = 0; i < N; i += step) {
    const int64_t c = std::min(step, N - i);
    pick_topk(at::linear(hidden.narrow(0, i, c), policy.head_weight(), policy.head_bias()),
              targets.narrow(0, i, c), temperature, k, lp.narrow(0, i, c), top_lp.narrow(0, i, c),
              top_ids.narrow(0, i, c));
  }
  const auto spread = real.unsqueeze(-1).expand({n, R, k});
  out.logprobs = torch::zeros({n, R}, fopts).masked_scatter(real, lp);
  out.top_lp = torch::zeros({n, R, k}, fopts).masked_scatter(spread, top_lp);
  out.top_ids = torch::zeros({n, R, k}, ids.options()).masked_scatter(spread, top_ids);
  return out;
}

RouteRecord route_experts(model::Policy& policy, const at::Tensor& ids, const at::Tensor& mask, int64_t P,
                          const KnownShape& known, LayerRunner* runner) {
  require_routing(policy);
  torch::NoGradGuard g;
  RouteRecord out;
  run_layers(policy, right_align(ids, mask, P, known.width), false, {nullptr, &out}, runner ? *runner : own_layers());
  return out;
}

}  // namespace gspo::train
