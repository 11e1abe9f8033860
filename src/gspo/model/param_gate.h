// Who owns a policy's decoder-layer weights between uses (distributed.zero_stage 3; a low-rank adapter that merges
// into them). With a gate added (Policy::add_gate), a decoder layer's parameters hold their values only between acquire() and release(): the
// policy calls acquire before the layer runs (forward, a checkpointed layer's recompute in backward, a routing pass)
// and release after it; backward_done() once that layer's backward has left its gradients in .grad. The gate decides
// where the values come from (ZeRO-3: an all-gather of every rank's shard) and where gradients go (a reduce-scatter
// into this rank's shard). Layers are numbered as in Policy::layer; everything outside them (embedding, final norm,
// head) is the gate's business too, but the policy does not ask for it (parallel/zero3.h keeps it whole).
#pragma once
#include <cstdint>
#include <vector>

namespace gspo::model {

// A gate's layer fetches over some span: how many an acquire() had to make whole, and how many of those a prefetch()
// had started (or kept) before it.
struct GateStats {
  int64_t gathers = 0, prefetched = 0;
};

class ParamGate {
 public:
  virtual ~ParamGate() = default;
  // Decoder layer `layer`'s parameters hold their full values until the matching release(). Nested calls nest.
  virtual void acquire(int64_t layer) = 0;
  virtual void release(int64_t layer) = 0;
  // Decoder layer `layer`'s backward is done: its parameters' .grad hold this backward's gradients.
  virtual void backward_done(int64_t layer) = 0;
  // A hint, given while a layer is held: `layer` is likely the next one acquired (the layer held now: it will be
  // acquired again after its release, as the last layer of a forward is in its backward). The gate may start
  // fetching it now to overlap with the current layer's compute; a wrong hint costs only the fetch.
  virtual void prefetch(int64_t layer) { (void)layer; }
  // Whether every parameter holds its full values now (what the whole-model methods, e.g. prefill, need).
  virtual bool whole() const = 0;
  // Whether release() takes the values away (ZeRO-3 frees its gathered weights), so a layer's autograd graph must
  // not outlive its hold (training then checkpoints activations); an adapter only swaps tensors back.
  virtual bool frees_weights() const { return true; }
};

// Gates in a chain, in the order they were added: acquire() runs them first to last (ZeRO-3's gather makes the layer
// whole, then a later gate may transform the whole weights, e.g. merge an adapter), release() and backward_done()
// last to first (the later gate sees the layer's gradient first and gives the weights back as it found them);
// prefetch() goes to every gate; whole() when every gate is. Holds no gate it does not own: each must outlive its
// place in the chain.
class GateChain : public ParamGate {
 public:
  void add(ParamGate* gate) { gates_.push_back(gate); }
  // Removes `gate` (nothing when it is not in the chain).
  void remove(ParamGate* gate) {
    for (auto it = gates_.begin(); it != gates_.end(); ++it)
      if (*it == gate) {
        gates_.erase(it);
        return;
      }
  }
  bool empty() const { return gates_.empty(); }
  size_t size() const { return gates_.size(); }

  void acquire(int64_t layer) override {
    for (auto* g : gates_) g->acquire(layer);
  }
  void release(int64_t layer) override {
    for (auto it = gates_.rbegin(); it != gates_.rend(); ++it) (*it)->release(layer);
  }
  void backward_done(int64_t layer) override {
    for (auto it = gates_.rbegin(); it != gates_.rend(); ++it) (*it)->backward_done(layer);
  }
  void prefetch(int64_t layer) override {
    for (auto* g : gates_) g->prefetch(layer);
  }
  bool whole() const override {
    for (auto* g : gates_)
      if (!g->whole()) return false;
    return true;
  }
  bool frees_weights() const override {
    for (auto* g : gates_)
      if (g->frees_weights()) return true;
    return false;
  }

 private:
  std::vector<ParamGate*> gates_;
};

}  // namespace gspo::model
