// The optional slot methods of a policy (slot_api 1, 2 with append_slots, 3 with live-key reads): the KV cache as a pool of rows that
// each hold one sequence from column 0, for continuous batching (rollout/slot_layout.cpp).
#include <torch/torch.h>

#include "gspo/core/error.h"
#include "gspo/model/policy.h"
#include "gspo/model/policy_impl.h"

namespace gspo::model {
void probe_slots(Policy::Impl& impl) {
  impl.slot_api = probe_interface(impl, "slot_api", 3, {"prefill_slots", "decode_slots", "copy_slots"},
                                  "Slot methods", "slot method", 1);
  if (impl.slot_api >= 2 && !impl.module.find_method("append_slots"))
    throw ModelContractError("'" + impl.path + "' has slot_api() 2 but lacks the slot method 'append_slots' " +
                             "(docs/model-contract.md)");
}

bool Policy::has_slots() const { return impl_->slot_api > 0; }
bool Policy::has_append() const { return impl_->slot_api >= 2; }
int64_t Policy::slot_api() const { return impl_->slot_api; }

at::Tensor Policy::prefill_slots(const at::Tensor& ids, const at::Tensor& lengths, at::Tensor& cache,
                                 const at::Tensor& slots, const at::Tensor& source) {
  if (impl_->runner || impl_->record_routes)
    return run_slot_pass(*impl_, impl_->runner, "prefill_context", {ids, lengths}, cache, 0, slots, source,
                         lengths - 1);
  require_whole(*impl_, "prefill_slots");
  return impl_->module.get_method("prefill_slots")({ids, lengths, cache, slots, source}).toTensor();
}

at::Tensor Policy::decode_slots(const at::Tensor& ids, at::Tensor& cache, const at::Tensor& columns, int64_t width) {
  if (impl_->runner || impl_->record_routes)
    return run_slot_pass(*impl_, impl_->runner, "decode_context", {ids, columns, width}, cache, width, columns,
                         c10::IValue(), c10::IValue());
  return impl_->module.get_method("decode_slots")({ids, cache, columns, width}).toTensor();
}

at::Tensor Policy::append_slots(const at::Tensor& ids, const at::Tensor& lengths, at::Tensor& cache,
                                const at::Tensor& slots, const at::Tensor& columns, int64_t width) {
  if (impl_->runner || impl_->record_routes)
    return run_slot_pass(*impl_, impl_->runner, "append_context", {ids, columns, width}, cache, width, slots,
                         c10::IValue(), lengths - 1);
  return impl_->module.get_method("append_slots")({ids, lengths, cache, slots, columns, width}).toTensor();
}

void Policy::copy_slots(at::Tensor& cache, const at::Tensor& src, const at::Tensor& dst, int64_t columns) {
  impl_->module.get_method("copy_slots")({cache, src, dst, columns});
}

}  // namespace gspo::model
