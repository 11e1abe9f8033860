// check_contract(): runs each method of a loaded policy on a small left-padded batch.
#include <torch/torch.h>

#include <algorithm>

#include "gspo/core/error.h"
#include "gspo/model/expert_runner.h"
#include "gspo/model/policy.h"

namespace gspo::model {
namespace {

void expect_shape(const at::Tensor& t, std::vector<int64_t> want, const std::string& what, const std::string& file,
                  bool any_float = false) {
  if (t.sizes().vec() != want) {
    std::ostringstream os;
    os << file << ": " << what << " returned shape " << t.sizes() << ", the contract needs " << at::IntArrayRef(want);
    throw ModelContractError(os.str());
  }
  const bool ok = t.scalar_type() == at::kFloat ||
                  (any_float && (t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf));
  if (!ok) {
    throw ModelContractError(file + ": " + what + " returned dtype " + std::string(c10::toString(t.scalar_type())) +
                             (any_float ? ", the contract needs float32, bfloat16 or float16 logits"
                                        : ", the contract needs float32 logits"));
  }
}

template <class F>
at::Tensor call(const std::string& what, const std::string& file, F&& f) {
  try {
    return f();
  } catch (const c10::Error& e) {
    std::string msg = e.what_without_backtrace();
    throw ModelContractError(file + ": " + what + " failed on a contract-shaped input: " + msg.substr(0, 300));
  }
}

// The per-layer methods (layer_api 1) composed by hand: embed -> layers -> final_norm -> head must give forward's
// logits on the real columns of the same left-padded batch (padded query columns are unspecified).
void check_layers(Policy& policy, const at::Tensor& ids, const at::Tensor& mask, const at::Tensor& full,
                  bool low_precision) {
  const std::string& file = policy.path();
  auto logits = call("the per-layer methods (embed, layer_context, layer, final_norm, head_weight, head_bias)", file,
                     [&] {
                       auto x = policy.embed(ids);
                       const auto ctx = policy.layer_context(mask);
                       for (int64_t i = 0; i < policy.num_layers(); ++i) x = policy.layer(i, x, ctx, false);
                       return at::linear(policy.final_norm(x), policy.head_weight(), policy.head_bias());
                     });
  if (logits.sizes() != full.sizes())
    throw ModelContractError(file + ": the per-layer methods give logits of shape " + c10::str(logits.sizes()) +
                             ", forward " + c10::str(full.sizes()));
  auto real = (mask > 0).unsqueeze(-1);
  const double diff = ((logits.to(at::kFloat) - full) * real).abs().max().item<double>();
  const double tol = low_precision ? 5e-2 * std::max(1.0, full.abs().max().item<double>()) : 1e-4;
  if (!(diff <= tol))
    throw ModelContractError(file + ": the per-layer methods (embed -> layer 0.." +
                             std::to_string(policy.num_layers() - 1) + " -> final_norm -> head) disagree with forward " +
                             "by " + std::to_string(diff) + " (tolerance " + std::to_string(tol) + ")");
}

// The slot methods (slot_api 1) on a pool of 3 slots full of noise: two prompts of different lengths (row 0 of the
// batch without its padding, and row 1) prefilled into slots 0, 1 and 2 (prompt 1 twice), slot 2 then given prompt 0
// by copy_slots, and two decode steps with the slots at different columns (the second over the first two slots only)
// must give forward's logits.
void check_slots(Policy& policy, const at::Tensor& ids, const at::Tensor& full, int64_t pad, bool low_precision) {
  const std::string& file = policy.path();
  const int64_t T = ids.size(1) - 2, V = full.size(2);
  auto opts = ids.options();
  const std::vector<int64_t> len{T - 2, T};   // prompt 0 = row 0's real tokens, prompt 1 = row 1's first T
  auto prompts = torch::full({2, T}, pad, opts);
  prompts[0].narrow(0, 0, T - 2).copy_(ids[0].narrow(0, 2, T - 2));
  prompts[1].copy_(ids[1].narrow(0, 0, T));
  auto cache = call("init_cache(3, T + 2)", file, [&] { return policy.init_cache(3, T + 2); });
  if (cache.is_floating_point()) cache.normal_();  // stale rows: nothing past a slot's column may be read
  const std::string what = "the slot methods (prefill_slots, copy_slots, decode_slots)";
  double worst = 0;
  auto compare = [&](const at::Tensor& got, const at::Tensor& want) {
    worst = std::max(worst, (got.to(at::kFloat) - want).abs().max().item<double>());
  };
  call(what, file, [&] {
    auto first = policy.prefill_slots(prompts, torch::tensor(len, opts), cache, torch::tensor({0, 1, 2}, opts),
                                      torch::tensor({0, 1, 1}, opts));
    expect_shape(first, {2, V}, "prefill_slots(input_ids [2, " + std::to_string(T) + "])", file);
    compare(first[0], full[0][T - 1]);
    compare(first[1], full[1][T - 1]);
    policy.copy_slots(cache, torch::tensor({0}, opts), torch::tensor({2}, opts), T);
    for (int64_t j = 0; j < 2; ++j) {  // the second step decodes the first two slots only
      const int64_t S = 3 - j;
      auto tok = torch::stack({ids[0][T + j], ids[1][T + j], ids[0][T + j]}).narrow(0, 0, S).view({S, 1});
      auto cols = torch::tensor({T - 2 + j, T + j, T - 2 + j}, opts).narrow(0, 0, S);
      auto step = policy.decode_slots(tok, cache, cols, T + j + 1);
      expect_shape(step, {S, V}, "decode_slots(input_ids [" + std::to_string(S) + ", 1])", file);
      compare(step[0], full[0][T + j]);
      compare(step[1], full[1][T + j]);
      if (S == 3) compare(step[2], full[0][T + j]);
    }
    return at::Tensor();
  });
  const double scale = std::max(1.0, full.abs().max().item<double>());
  const double tol = (low_precision ? 5e-2 : 1e-4) * scale;
  if (!(worst <= tol))
    throw ModelContractError(file + ": " + what + " disagree with forward by " + std::to_string(worst) +
                             " (tolerance " + std::to_string(tol) + ")");
}

// append_slots (slot_api 2) on a pool of 2 slots full of noise: the first two tokens of each row prefilled (row 0's
// real ones), then T - 2 tokens appended to slot 1 (row 1's next) and T - 4 to slot 0 (row 0's, right-padded), in
// the order slot 1, slot 0, and one decode step after: the appended tokens' last logits and the step's must be
// forward's (so the append wrote the right cache columns at the right positions).
void check_append(Policy& policy, const at::Tensor& ids, const at::Tensor& full, int64_t pad, bool low_precision) {
  const std::string& file = policy.path();
  const int64_t T = ids.size(1) - 2, V = full.size(2);
  if (T < 4) return;  // a model too short to append after a two-token prompt
  auto opts = ids.options();
  auto cache = call("init_cache(2, T + 2)", file, [&] { return policy.init_cache(2, T + 2); });
  if (cache.is_floating_point()) cache.normal_();
  double worst = 0;
  auto compare = [&](const at::Tensor& got, const at::Tensor& want) {
    worst = std::max(worst, (got.to(at::kFloat) - want).abs().max().item<double>());
  };
  call("append_slots", file, [&] {
    auto prompts = torch::stack({ids[0].narrow(0, 2, 2), ids[1].narrow(0, 0, 2)});
    policy.prefill_slots(prompts, torch::tensor({2, 2}, opts), cache, torch::tensor({0, 1}, opts),
                         torch::tensor({0, 1}, opts));
    auto more = torch::full({2, T - 2}, pad, opts);
    more[0].copy_(ids[1].narrow(0, 2, T - 2));
    more[1].narrow(0, 0, T - 4).copy_(ids[0].narrow(0, 4, T - 4));
    auto last = policy.append_slots(more, torch::tensor({T - 2, T - 4}, opts), cache, torch::tensor({1, 0}, opts),
                                    torch::tensor({2, 2}, opts), T);
    expect_shape(last, {2, V}, "append_slots(input_ids [2, " + std::to_string(T - 2) + "])", file);
    compare(last[0], full[1][T - 1]);
    compare(last[1], full[0][T - 1]);
    auto tok = torch::stack({ids[0][T], ids[1][T]}).view({2, 1});
    auto step = policy.decode_slots(tok, cache, torch::tensor({T - 2, T}, opts), T + 1);
    compare(step[0], full[0][T]);
    compare(step[1], full[1][T]);
    return at::Tensor();
  });
  const double scale = std::max(1.0, full.abs().max().item<double>());
  const double tol = (low_precision ? 5e-2 : 1e-4) * scale;
  if (!(worst <= tol))
    throw ModelContractError(file + ": append_slots (then decode_slots) disagrees with forward by " +
                             std::to_string(worst) + " (tolerance " + std::to_string(tol) + ")");
}

// The model's own feed-forward as an ExpertRunner, so the slot methods run one layer at a time (ep_api 2) can be
// checked against forward like the whole slot methods; each MoE layer must get the pass's tokens.
class OwnExperts final : public ExpertRunner {
 public:
  explicit OwnExperts(Policy& policy) : policy_(policy) {}
  void begin_pass(int64_t tokens) override { tokens_ = tokens; }
  at::Tensor feed_forward(int64_t index, const at::Tensor& n, at::Tensor* experts) override {
    if (experts) throw std::logic_error("the contract check's own experts do not record routes");
    if (n.dim() != 2 || n.size(0) != tokens_)
      throw ModelContractError(policy_.path() + ": slot_attention gave MoE layer " + std::to_string(index) + " " +
                               std::to_string(n.numel()) + " values, not the pass's " + std::to_string(tokens_) +
                               " tokens");
    ++calls;
    return policy_.feed_forward(index, n);
  }
  void finish() override {}
  int64_t calls = 0;

 private:
  Policy& policy_;
  int64_t tokens_ = 0;
};

// The slot and append checks again with the slot passes run another way (`how` says which, in a failure).
void check_slots_as(Policy& policy, const at::Tensor& ids, const at::Tensor& full, int64_t pad, bool low_precision,
                    const char* how) {
  try {
    check_slots(policy, ids, full, pad, low_precision);
    check_append(policy, ids, full, pad, low_precision);
  } catch (const ModelContractError& e) {
    throw ModelContractError(std::string(e.what()) + ", " + how);
  }
}

// The slot methods again, one layer at a time (ep_api 2): each MoE layer's feed-forward through a runner.
void check_expert_slots(Policy& policy, const at::Tensor& ids, const at::Tensor& full, int64_t pad,
                        bool low_precision) {
  OwnExperts own(policy);
  policy.set_expert_runner(&own);
  struct Unset {
    Policy& p;
    ~Unset() { p.set_expert_runner(nullptr); }
  } unset{policy};
  check_slots_as(policy, ids, full, pad, low_precision,
                 "run one layer at a time (ep_api 2: the *_context methods, slot_attention, feed_forward, slot_logits)");
  if (!policy.moe_layers().empty() && own.calls == 0)
    throw ModelContractError(policy.path() + ": the slot passes one layer at a time ran no MoE layer through the "
                             "runner, though moe_layers() names some");
}

// route_api 2: the slot passes one layer at a time through routed_feed_forward (the rollout's route record) sample as
// the whole-model slot methods do, and each records int64 experts [tokens, MoE layers, top_k] in range.
void check_recorded_slots(Policy& policy, const at::Tensor& ids, const at::Tensor& full, int64_t pad,
                          bool low_precision) {
  policy.record_routes(true);
  struct Off {
    Policy& p;
    ~Off() { p.record_routes(false); }
  } off{policy};
  check_slots_as(policy, ids, full, pad, low_precision,
                 "run one layer at a time recording the experts (route_api 2: routed_feed_forward)");
  const auto& r = policy.pass_routes();
  const auto L = static_cast<int64_t>(policy.moe_layers().size());
  if (!r.defined() || r.dim() != 3 || r.size(1) != L || r.size(2) < 1 || r.scalar_type() != at::kLong ||
      (r.numel() > 0 && r.min().item<int64_t>() < 0))
    throw ModelContractError(policy.path() + ": routed_feed_forward's experts over a slot pass came to " +
                             (r.defined() ? c10::str(r.sizes()) + " " + c10::toString(r.scalar_type()) : "nothing") +
                             "; the contract needs int64 [tokens, " + std::to_string(L) + " MoE layers, top_k] >= 0");
}

// The routing methods (route_api 1), layer by layer on the same batch: routed_layer without routes is layer; an MoE
// layer (and only the layers moe_layers() names) reports int64 experts [B, T, top_k], none negative;
// replaying its own experts gives its output back, and replaying other experts (each token given its neighbour's)
// changes it.
void check_routing(Policy& policy, const at::Tensor& ids, const at::Tensor& mask, bool low_precision) {
  const std::string& file = policy.path();
  const auto& moe = policy.moe_layers();
  call("the routing methods (moe_layers, routed_layer)", file, [&] {
    auto x = policy.embed(ids);
    const auto ctx = policy.layer_context(mask);
    const double tol = (low_precision ? 5e-2 : 1e-5) * std::max(1.0, x.abs().max().item<double>());
    auto differ = [](const at::Tensor& a, const at::Tensor& b) {
      return (a.to(at::kFloat) - b.to(at::kFloat)).abs().max().item<double>();
    };
    for (int64_t i = 0; i < policy.num_layers(); ++i) {
      const std::string name = "routed_layer(" + std::to_string(i) + ")";
      auto plain = policy.layer(i, x, ctx, false);
      auto r = policy.routed_layer(i, x, ctx);
      if (const double d = differ(r.out, plain); !(d <= tol))
        throw ModelContractError(file + ": " + name + " without routes disagrees with layer(" + std::to_string(i) +
                                 ") by " + std::to_string(d) + " (tolerance " + std::to_string(tol) + ")");
      const bool is_moe = std::find(moe.begin(), moe.end(), i) != moe.end();
      if (!is_moe) {
        if (r.experts.numel() != 0)
          throw ModelContractError(file + ": " + name + " reports experts but moe_layers() does not name layer " +
                                   std::to_string(i));
        x = plain;
        continue;
      }
      const auto& e = r.experts;
      if (e.dim() != 3 || e.size(0) != ids.size(0) || e.size(1) != ids.size(1) || e.size(2) < 1 ||
          e.scalar_type() != at::kLong || e.min().item<int64_t>() < 0)
        throw ModelContractError(file + ": " + name + " returned experts of shape " + c10::str(e.sizes()) + " and dtype " +
                                 c10::toString(e.scalar_type()) + "; the contract needs int64 [B, T, top_k] >= 0");
      if (const double d = differ(policy.layer(i, x, ctx, false, e), plain); !(d <= tol))
        throw ModelContractError(file + ": " + name + " replaying its own experts changes the output by " +
                                 std::to_string(d) + " (tolerance " + std::to_string(tol) + ")");
      auto other = e.roll(1, 1);
      if (!std::get<0>(other.sort(-1)).equal(std::get<0>(e.sort(-1))) &&
          differ(policy.layer(i, x, ctx, false, other), plain) == 0)
        throw ModelContractError(file + ": " + name + " ignores the routes it is given (other experts, same output)");
      x = plain;
    }
    return at::Tensor();
  });
}

}  // namespace

double check_contract(Policy& policy) {
  torch::NoGradGuard no_grad;
  const auto& m = policy.manifest();
  const std::string& file = policy.path();
  const int64_t B = 2, T = std::min<int64_t>(6, m.max_seq_len - 2), V = m.vocab_size;
  auto opts = torch::TensorOptions().dtype(torch::kLong).device(policy.device());
  auto gen = torch::arange(B * (T + 2), opts).remainder(std::min<int64_t>(V, 200)).view({B, T + 2});
  auto mask = torch::ones({B, T + 2}, opts);
  mask.index_put_({0, torch::indexing::Slice(0, 2)}, 0);  // row 0 left-padded by two columns

  auto full = call("forward(input_ids [2, T], attention_mask [2, T])", file, [&] { return policy.logits(gen, mask); });
  expect_shape(full, {B, T + 2, V}, "forward(input_ids [2, " + std::to_string(T + 2) + "])", file, true);
  const bool low_precision = full.scalar_type() != at::kFloat || m.dtype != "float32";
  full = full.to(at::kFloat);

  if (policy.has_logits_from()) {
    auto tail = call("logits_from(input_ids [2, T], attention_mask [2, T], 3)", file,
                     [&] { return policy.logits_from(gen, mask, 3); });
    expect_shape(tail, {B, T - 1, V}, "logits_from(input_ids [2, " + std::to_string(T + 2) + "], first 3)", file, true);
    const double diff = (tail.to(at::kFloat) - full.narrow(1, 3, T - 1)).abs().max().item<double>();
    const double tol = low_precision ? 5e-2 * std::max(1.0, full.abs().max().item<double>()) : 1e-4;
    if (!(diff <= tol))
      throw ModelContractError(file + ": logits_from disagrees with forward's columns by " + std::to_string(diff) +
                               " (tolerance " + std::to_string(tol) + ")");
  }

  if (policy.has_layers()) check_layers(policy, gen, mask, full, low_precision);
  if (policy.has_slots()) check_slots(policy, gen, full, m.pad_token_id, low_precision);
  if (policy.has_append()) check_append(policy, gen, full, m.pad_token_id, low_precision);
  if (policy.has_routing()) check_routing(policy, gen, mask, low_precision);
  if (policy.has_expert_slots()) check_expert_slots(policy, gen, full, m.pad_token_id, low_precision);
  if (policy.can_record_routes()) check_recorded_slots(policy, gen, full, m.pad_token_id, low_precision);

  auto cache = call("init_cache(2, T)", file, [&] { return policy.init_cache(B, T + 2); });
  auto first = call("prefill", file, [&] {
    return policy.prefill(gen.narrow(1, 0, T), mask.narrow(1, 0, T), cache);
  });
  expect_shape(first, {B, V}, "prefill(input_ids [2, " + std::to_string(T) + "])", file);
  double worst = (first - full.select(1, T - 1)).abs().max().item<double>();
  for (int64_t s = T; s < T + 2; ++s) {
    auto step = call("decode", file, [&] {
      return policy.decode(gen.narrow(1, s, 1), mask.narrow(1, 0, s + 1), cache, s);
    });
    expect_shape(step, {B, V}, "decode(input_ids [2, 1])", file);
    worst = std::max(worst, (step - full.select(1, s)).abs().max().item<double>());
  }
  // Padded query positions are unspecified; compare only real columns (row 0's first two are padding).
  const double tol = low_precision ? 5e-2 * std::max(1.0, full.abs().max().item<double>()) : 1e-3;
  if (!(worst <= tol)) {
    throw ModelContractError(file + ": KV-cache decode disagrees with forward by " + std::to_string(worst) +
                             " (tolerance " + std::to_string(tol) + ")");
  }
  auto rows = torch::tensor({1, 0}, opts);
  auto reordered = call("reorder_cache", file, [&] { return policy.reorder_cache(cache, rows); });
  if (reordered.dim() < 1 || reordered.numel() != cache.numel()) {
    throw ModelContractError(file + ": reorder_cache changed the cache size");
  }
  return worst;
}

}  // namespace gspo::model
