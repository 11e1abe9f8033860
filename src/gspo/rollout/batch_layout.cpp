// The batch layout of the decode loop (decode_loop.h): every row of a call (or of one static batch under a KV budget)
// in one cache, admitted at once. Prompts are left-padded to the longest, P columns, and prefilled once each; the
// cache is then expanded to their G samples. Every slot decodes at the same column P + step under an attention mask
// (a row's token counts where it wrote one), through decode() or a CUDA graph of decode_static. Compaction reorders
// the cache into a smaller one, keeping the running rows in order. Works for any model; a row cannot pause.
#include <torch/torch.h>

#include <stdexcept>

#include "gspo/model/policy.h"
#include "gspo/rollout/decode_graph.h"
#include "gspo/rollout/decode_loop.h"

namespace gspo::rollout {
namespace {

class BatchLayout final : public KvLayout {
 public:
  BatchLayout(model::Policy& policy, const std::vector<std::vector<int64_t>>& prompts, int64_t G, int64_t R)
      : policy_(policy), prompts_(prompts), G_(G), R_(R), N_(static_cast<int64_t>(prompts.size()) * G) {
    for (const auto& p : prompts) P_ = std::max<int64_t>(P_, p.size());
  }
  int64_t pool() const override { return N_; }
  bool waiting() const override { return !admitted_; }
  bool can_pause() const override { return false; }
  bool can_append() const override { return false; }

  void refill(DecodeLoop& loop) override {
    if (admitted_) return;
    admitted_ = true;
    const int64_t B = static_cast<int64_t>(prompts_.size());
    auto [pids, pmask] = left_pad(prompts_, P_, policy_.manifest().pad_token_id);
    cache_ = policy_.init_cache(B, P_ + R_);  // R_: every response position (a static batch never inserts)
    auto pm = loop.upload(flat(pmask)).view({B, P_});
    auto logits = policy_.prefill(loop.upload(flat(pids)).view({B, P_}), pm, cache_);
    loop.stats().prefill_tokens += B * P_;
    if (G_ > 1) {  // one copy of the cache; skipped when there is nothing to fan out
      std::vector<int64_t> expand(N_);
      for (int64_t i = 0; i < N_; ++i) expand[i] = i / G_;
      auto e = loop.upload(expand);
      cache_ = policy_.reorder_cache(cache_, e);
      logits = logits.index_select(0, e);
    }
    loop.stats().kv_bytes = std::max<int64_t>(loop.stats().kv_bytes, cache_.nbytes());
    mask_ = torch::zeros({N_, P_ + R_}, torch::TensorOptions().device(policy_.device()).dtype(torch::kLong));
    mask_.narrow(1, 0, P_).copy_(pm.repeat_interleave(G_, 0));
    column_ = P_;
    std::vector<Admit> admits(N_);
    for (int64_t i = 0; i < N_; ++i) admits[i] = {i, i, P_};
    loop.admit(admits, logits);
  }

  void stage(const SlotState&, const at::Tensor& ids, const at::Tensor& wrote) override {
    start_ = column_++;
    mask_.select(1, start_).copy_(wrote.to(torch::kLong));
    ids_ = ids;
  }
  at::Tensor decode() override { return policy_.decode(ids_, mask_.narrow(1, 0, start_ + 1), cache_, start_); }
  bool capture(DecodeGraph& graph) override { return graph.capture(policy_, cache_, ids_, mask_, start_); }
  at::Tensor replay(DecodeGraph& graph) override { return graph.replay(ids_, mask_, start_); }
  void append(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t) override {
    throw std::logic_error("a static batch cannot append tokens to one row");  // can_append() is false
  }

  std::vector<int64_t> order(const SlotState& s) const override {
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < s.size(); ++i)
      if (s.running(i)) keep.push_back(i);
    return keep;
  }
  void compact(DecodeLoop&, const std::vector<int64_t>&, const at::Tensor& order) override {
    cache_ = policy_.reorder_cache(cache_, order);
    mask_ = mask_.index_select(0, order);
  }

 private:
  static std::vector<int64_t> flat(const at::Tensor& t) {
    auto c = t.contiguous();
    return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
  }

  model::Policy& policy_;
  const std::vector<std::vector<int64_t>>& prompts_;
  const int64_t G_, R_, N_;
  int64_t P_ = 0;
  bool admitted_ = false;
  at::Tensor cache_, mask_, ids_;
  int64_t column_ = 0, start_ = 0;
};

}  // namespace

std::unique_ptr<KvLayout> batch_layout(model::Policy& policy, const std::vector<std::vector<int64_t>>& prompts,
                                       int64_t G, int64_t max_new_tokens) {
  return std::make_unique<BatchLayout>(policy, prompts, G, max_new_tokens);
}

}  // namespace gspo::rollout
