#include "gspo/train/layer_runner.h"

#include "gspo/model/policy.h"

namespace gspo::train {
namespace {

class OwnLayers final : public LayerRunner {
 public:
  at::Tensor run(model::Policy& policy, int64_t index, const at::Tensor& x, const model::LayerContext& ctx,
                 bool checkpoint, const at::Tensor& replay, at::Tensor* chosen) override {
    if (!chosen) return policy.layer(index, x, ctx, checkpoint, replay);
    auto r = policy.routed_layer(index, x, ctx);
    *chosen = r.experts;
    return r.out;
  }
  bool needs_layers() const override { return false; }
  bool runs_shared(const model::Policy& policy) const override { return policy.has_shared_layer(); }
};

}  // namespace

bool LayerRunner::runs_shared(const model::Policy&) const { return false; }

LayerRunner& own_layers() {
  static OwnLayers own;
  return own;
}

}  // namespace gspo::train
