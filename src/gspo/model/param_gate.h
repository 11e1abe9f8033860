// Who owns a policy's decoder-layer weights between uses (distributed.zero_stage 3). With a gate set
// (Policy::set_gate), a decoder layer's parameters hold their values only between acquire() and release(): the
// policy calls acquire before the layer runs (forward, a checkpointed layer's recompute in backward, a routing pass)
// and release after it; backward_done() once that layer's backward has left its gradients in .grad. The gate decides
// where the values come from (ZeRO-3: an all-gather of every rank's shard) and where gradients go (a reduce-scatter
// into this rank's shard). Layers are numbered as in Policy::layer; everything outside them (embedding, final norm,
// head) is the gate's business too, but the policy does not ask for it (parallel/zero3.h keeps it whole).
#pragma once
#include <cstdint>

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
};

}  // namespace gspo::model
