#include "gspo/rollout/written.h"

#include <torch/torch.h>

namespace gspo::rollout {

Written::Written(int64_t rows, int64_t R, int64_t pad, c10::Device dev) {
  auto on = torch::TensorOptions().device(dev);
  tokens = torch::full({rows, R}, pad, on.dtype(torch::kLong));
  logprobs = torch::zeros({rows, R}, on.dtype(torch::kFloat));
  inserted = torch::zeros({rows, R}, on.dtype(torch::kBool));
  length = torch::zeros({rows}, on.dtype(torch::kLong));
  finish = torch::full({rows}, static_cast<int64_t>(Finish::kLength), on.dtype(torch::kLong));
}

void Written::collect(int64_t n, SampledRows& out, int64_t first) const {
  const int64_t R = tokens.size(1);
  auto t = tokens.narrow(0, 0, n).to(torch::kCPU).contiguous(), l = logprobs.narrow(0, 0, n).to(torch::kCPU).contiguous();
  auto len = length.narrow(0, 0, n).to(torch::kCPU), fin = finish.narrow(0, 0, n).to(torch::kCPU);
  auto own = inserted.narrow(0, 0, n).logical_not().to(torch::kUInt8).to(torch::kCPU).contiguous();
  for (int64_t r = 0; r < n; ++r) {
    const int64_t k = len.data_ptr<int64_t>()[r];
    const int64_t* tp = t.data_ptr<int64_t>() + r * R;
    const float* lp = l.data_ptr<float>() + r * R;
    out.ids[first + r].assign(tp, tp + k);
    out.logprobs[first + r].assign(lp, lp + k);
    const uint8_t* op = own.data_ptr<uint8_t>() + r * R;
    out.own[first + r].assign(op, op + k);
    out.finish[first + r] = static_cast<Finish>(fin.data_ptr<int64_t>()[r]);
  }
}

}  // namespace gspo::rollout
