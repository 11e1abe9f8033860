// ZeRO-3's optimizer (zero3.h): AdamW on every unit's shards (its ShardMoments), the moments' size, and the masters'
// finite check.
#include "gspo/parallel/zero3.h"

#include <torch/torch.h>

#include "gspo/parallel/comm.h"
#include "gspo/parallel/sharded_adamw.h"
#include "gspo/parallel/zero3_unit.h"

namespace gspo::parallel {

void Zero3::step(double lr, double grad_scale) {
  torch::NoGradGuard g;
  settle_grads();
  drop_ahead();  // gathered from the masters this step changes
  ++step_;
  for (auto& u : units_) {
    u.moments->step(u.master, grad_scale == 1.0 ? u.grad : u.grad * grad_scale, u.active, lr, step_, h_);
    if (u.holds > 0) gather(u);  // unit 0, and the layers kept whole
  }
}

int64_t Zero3::state_bytes() const {
  int64_t n = 0;
  for (const auto& u : units_)
    if (u.moments) n += u.moments->bytes();
  return n;
}

bool Zero3::finite() {
  std::vector<at::Tensor> each;  // one flag per unit, read in one copy
  for (const auto& u : units_) each.push_back(torch::isfinite(u.master).all());
  const bool ok = torch::stack(each).all().item<bool>();
  return !comm_.any(!ok);
}

}  // namespace gspo::parallel
