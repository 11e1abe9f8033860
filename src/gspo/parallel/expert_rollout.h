// Expert parallelism's rollout (#37; docs/distributed.md, "Expert parallelism"): the ExpertRunner
// (model/expert_runner.h) that runs each MoE layer of a sampling pass with the group's ranks, each holding only its
// own experts. Per layer and pass, fixed shapes: every rank's rows are all-gathered (padded to the pass's largest
// share), every rank routes the gathered rows (float32 router, top-k, renormalised when the model says), runs its own
// experts on the (row, choice) pairs routed to them and weights their outputs, and the float32 partial sums are
// reduce-scattered back, each rank receiving its rows' sums over every expert (vLLM's default expert-parallel
// pattern; bench/bench_ep_exchange measured it against the all-to-all training uses). Every rank routes the same
// gathered tensor with the same router and kernel, so each pair is run by exactly the one rank owning its expert.
//
// A pass begins with an all-gather of each rank's row count (-1: the rank has finished its phase), so ranks whose rows
// differ in number, or who run different numbers of passes, stay in step: finish() keeps a rank taking part with no
// rows until every rank of the group has called it. A pass larger than `chunk_rows` rows a rank (a prefill) runs in
// chunks of that many, bounding the gathered buffers at W x chunk_rows x H x (b + 4) bytes.
//
// Cost per MoE layer and pass (W ranks, m rows a rank at most, hidden H, model dtype of b bytes): all-gather
// (W - 1) m H b bytes in, reduce-scatter (W - 1) m H 4 bytes out; memory W m H (b + 4) bytes while the layer runs.
#pragma once
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "gspo/model/expert_runner.h"

namespace gspo::model { class Policy; }

namespace gspo::parallel {

class Comm;

class RolloutExperts final : public model::ExpertRunner {
 public:
  // This rank keeps experts [g n/E, (g+1) n/E) of every MoE layer of `policy` (g = its rank in `group`, E its size),
  // read from the policy's parameters now (layers.<i>.mlp.experts.<e>.*; the others may be freed). Both must outlive
  // this object. std::invalid_argument when a layer's experts do not split over the group.
  static constexpr int64_t kDefaultGatherRows = 65536;  // W x chunk_rows at most, unless chunk_rows is given
  RolloutExperts(model::Policy& policy, Comm& group, int64_t chunk_rows = 0);
  // Logs an error when passes ran since the last finish(): the group's other ranks wait for this one in vain.
  ~RolloutExperts() override;

  void begin_pass(int64_t tokens) override;
  // With `experts`: this rank's rows' experts as the group routed them (every rank routes the gathered rows alike).
  at::Tensor feed_forward(int64_t index, const at::Tensor& n, at::Tensor* experts) override;
  void finish() override;

  struct Stats {
    int64_t passes = 0;       // passes this rank ran with rows of its own
    int64_t idle_passes = 0;  // passes it took part in with none (after its finish(), waiting for the group)
    int64_t rows = 0;         // rows of its own sent through MoE layers
    int64_t pairs = 0;        // (row, choice) pairs its experts ran, from every rank
  };
  const Stats& stats() const { return stats_; }
  int64_t chunk_rows() const { return chunk_; }

 private:
  struct Layer {
    int64_t index = 0, top_k = 0;
    bool norm_topk = false;
    at::Tensor router;                         // [n, H]
    std::vector<at::Tensor> gate, up, down;    // this rank's experts
  };
  // All-gathers this rank's row count (-1: finished); false when every rank has finished.
  bool agree(int64_t tokens);
  // One chunk of one layer: mine [chunk, H] (this rank's rows, zero-padded) -> [chunk, H] float32 sums; with `own`,
  // the experts of this rank's real rows of the chunk [rows, top_k].
  at::Tensor exchange(const Layer& layer, const at::Tensor& mine, int64_t chunk, at::Tensor* own);

  Comm& group_;
  std::vector<Layer> layers_;
  int64_t first_ = 0, per_ = 0, hidden_ = 0, chunk_ = 0;
  c10::ScalarType dtype_;
  c10::Device device_;
  std::vector<int64_t> counts_;  // the pass's rows per rank (0 for finished ranks)
  std::vector<at::Tensor> real_;  // per chunk of the pass: the gathered rows that are real (on the device)
  int64_t tokens_ = 0, most_ = 0;
  int64_t open_ = 0;  // passes since the last finish()
  Stats stats_;
};

}  // namespace gspo::parallel
