// CUDA-graph replay of one decode step (rollout.cuda_graphs). A decode step of a small or medium model on a GPU
// is dominated by kernel launches and the TorchScript interpreter; a captured graph replays all of its kernels in
// one launch. The graph is captured from the model's optional decode_static method, whose shapes do not change from
// step to step, for one cache tensor: it is valid until the sampler compacts the cache (then reset() and capture
// again for the smaller batch). Inputs are copied into the graph's static buffers before each replay.
//
// Built only with CUDA (GSPO_WITH_CUDA); elsewhere available() is false and the sampler decodes eagerly. Capture can
// fail for models whose decode synchronises with the host (e.g. MoE routing with data-dependent shapes): capture()
// then returns false and the sampler stays eager. A capture while the policy records its routes (Rollout Routing
// Replay) captures the layer-by-layer slot pass, and its routes are a static output like the logits.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>

namespace gspo::model { class Policy; }

namespace gspo::rollout {

class DecodeGraph {
 public:
  DecodeGraph();
  ~DecodeGraph();
  DecodeGraph(const DecodeGraph&) = delete;
  DecodeGraph& operator=(const DecodeGraph&) = delete;

  // True when this build has CUDA graphs and `policy` sits on a CUDA device with a decode_static method
  // (available_slots: with the slot methods).
  static bool available(const model::Policy& policy);
  static bool available_slots(const model::Policy& policy);

  // Captures decode_static for ids [L, 1], mask [L, S] and `cache` (which the graph then reads and writes in place),
  // after warm-up calls that run this step's real inputs (each writes the same cache column, so the replay that
  // follows is idempotent). Returns false, with the reason in last_error(), when the capture fails.
  bool capture(model::Policy& policy, at::Tensor cache, const at::Tensor& ids, const at::Tensor& mask,
               int64_t position);
  // Copies the inputs into the static buffers and replays; returns [L, V] float32 logits (a fresh tensor).
  at::Tensor replay(const at::Tensor& ids, const at::Tensor& mask, int64_t position);
  // The same for the slot pool of continuous batching (decode_loop.h, the slot layout): decode_slots over every one of `width` cache
  // columns for ids [S, 1] and columns [S], so one capture serves every step until the pool changes size.
  bool capture_slots(model::Policy& policy, at::Tensor cache, const at::Tensor& ids, const at::Tensor& columns,
                     int64_t width);
  at::Tensor replay_slots(const at::Tensor& ids, const at::Tensor& columns);
  // Captured while the policy recorded its routes (Policy::record_routes: the slot passes one layer at a time, each MoE
  // layer through routed_feed_forward): the static tensor the replays write each step's experts into, [S, MoE
  // layers, top_k] int64 (what Policy::pass_routes() holds after an eager step); undefined otherwise.
  const at::Tensor& routes() const;
  void reset();
  bool ready() const;
  int64_t captures() const { return captures_; }
  const std::string& last_error() const { return error_; }

 private:
  struct Impl;
  template <class Step>
  bool capture_with(model::Policy& policy, std::unique_ptr<Impl> impl, Step&& step);
  std::unique_ptr<Impl> impl_;
  int64_t captures_ = 0;
  std::string error_;
};

}  // namespace gspo::rollout
