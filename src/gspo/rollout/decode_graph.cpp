#include "gspo/rollout/decode_graph.h"

#include <torch/torch.h>

#ifdef GSPO_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#include "gspo/model/policy.h"

namespace gspo::rollout {

#ifdef GSPO_WITH_CUDA

struct DecodeGraph::Impl {
  at::cuda::CUDAGraph graph;
  at::Tensor cache, ids, mask, position, columns, logits;  // static buffers the graph reads and writes
  at::Tensor routes;  // the captured step's Policy::pass_routes() when it recorded them
  int64_t width = 0;
};

namespace {
// The TorchScript profiling executor specialises a method over its first calls: capture only after it settled.
constexpr int kWarmupCalls = 3;
}  // namespace

bool DecodeGraph::available(const model::Policy& policy) {
  return policy.device().is_cuda() && policy.has_static_decode();
}

bool DecodeGraph::available_slots(const model::Policy& policy) {
  return policy.device().is_cuda() && policy.has_slots();
}

// Warm-up calls then the capture of `step` (which reads and writes impl's buffers) on a side stream.
namespace {
// A capture that threw part-way (a host sync inside the step, an unsupported kernel) leaves its stream capturing, and
// CUDA refuses every later allocation or sync of the process while it does: the eager fallback too (the 2026-11-28
// H200 check). at::cuda::CUDAGraph::capture_end cannot end it: it checks the current stream first (the guard that
// made the side stream current is gone by the catch) and throws on an invalidated capture before it releases the
// allocator's capture pool. So: end the capture on its stream here, drop whatever graph it made, hand the pool back,
// and clear the sticky error the invalid capture left. The default CUDA generator stays in its capture mode (its
// capture_epilogue is CUDAGraph's to call): gspo draws no random numbers on the device (sampling's noise is hashed on
// the host, rollout/noise.h), so nothing reads it.
void abandon_capture(at::cuda::CUDAGraph& graph, const c10::cuda::CUDAStream& stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream.stream(), &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    (void)cudaStreamEndCapture(stream.stream(), &partial);  // cudaErrorStreamCaptureInvalidated: expected
    if (partial != nullptr) (void)cudaGraphDestroy(partial);
  }
  c10::cuda::CUDACachingAllocator::endAllocateToPool(stream.device_index(), graph.pool());
  c10::cuda::CUDACachingAllocator::releasePool(stream.device_index(), graph.pool());
  (void)cudaGetLastError();
}
}  // namespace

// Warm-up calls then the capture of `step` (which reads and writes impl's buffers) on a side stream.
template <class Step>
bool DecodeGraph::capture_with(model::Policy& policy, std::unique_ptr<Impl> impl, Step&& step) {
  const auto index = policy.device().index();
  auto main = c10::cuda::getCurrentCUDAStream(index);
  auto stream = c10::cuda::getStreamFromPool(false, index);
  bool capturing = false;
  try {
    // Capture must run on a side stream; warm-up runs there too so the allocator's pools match.
    at::cuda::CUDAEvent inputs_ready;
    inputs_ready.record(main);
    inputs_ready.block(stream);
    {
      c10::cuda::CUDAStreamGuard guard(stream);
      torch::NoGradGuard no_grad;
      for (int i = 0; i < kWarmupCalls; ++i) step(*impl);
      impl->graph.capture_begin();
      capturing = true;
      impl->logits = step(*impl);
      impl->routes = policy.pass_routes();  // (undefined unless the policy records: record_routes(false) clears it)
      capturing = false;
      impl->graph.capture_end();
    }
    at::cuda::CUDAEvent captured;
    captured.record(stream);
    captured.block(main);
  } catch (const std::exception& e) {
    error_ = e.what();
    if (capturing) {
      impl->logits = at::Tensor();  // allocated in the capture's pool: released with it below
      impl->routes = at::Tensor();
      abandon_capture(impl->graph, stream);
    }
    return false;
  }
  impl_ = std::move(impl);
  ++captures_;
  return true;
}

bool DecodeGraph::capture(model::Policy& policy, at::Tensor cache, const at::Tensor& ids, const at::Tensor& mask,
                          int64_t position) {
  reset();
  auto impl = std::make_unique<Impl>();
  impl->cache = cache;
  impl->ids = ids.clone();
  impl->mask = mask.clone();
  impl->position = torch::full({1}, position, ids.options().dtype(torch::kLong));
  return capture_with(policy, std::move(impl),
                      [&](Impl& g) { return policy.decode_static(g.ids, g.mask, g.cache, g.position); });
}

bool DecodeGraph::capture_slots(model::Policy& policy, at::Tensor cache, const at::Tensor& ids,
                                const at::Tensor& columns, int64_t width) {
  reset();
  auto impl = std::make_unique<Impl>();
  impl->cache = cache;
  impl->ids = ids.clone();
  impl->columns = columns.clone();
  impl->width = width;
  return capture_with(policy, std::move(impl),
                      [&](Impl& g) { return policy.decode_slots(g.ids, g.cache, g.columns, g.width); });
}

at::Tensor DecodeGraph::replay(const at::Tensor& ids, const at::Tensor& mask, int64_t position) {
  impl_->ids.copy_(ids, /*non_blocking=*/true);
  impl_->mask.copy_(mask, /*non_blocking=*/true);
  impl_->position.fill_(position);
  impl_->graph.replay();
  return impl_->logits.clone();
}

at::Tensor DecodeGraph::replay_slots(const at::Tensor& ids, const at::Tensor& columns) {
  impl_->ids.copy_(ids, /*non_blocking=*/true);
  impl_->columns.copy_(columns, /*non_blocking=*/true);
  impl_->graph.replay();
  return impl_->logits.clone();
}

#else  // no CUDA in this build: never available, so the sampler never calls capture or replay.

struct DecodeGraph::Impl {
  at::Tensor routes;
};

bool DecodeGraph::available(const model::Policy&) { return false; }
bool DecodeGraph::available_slots(const model::Policy&) { return false; }

bool DecodeGraph::capture(model::Policy&, at::Tensor, const at::Tensor&, const at::Tensor&, int64_t) {
  error_ = "this gspo was built without CUDA";
  return false;
}

at::Tensor DecodeGraph::replay(const at::Tensor&, const at::Tensor&, int64_t) { return {}; }

bool DecodeGraph::capture_slots(model::Policy&, at::Tensor, const at::Tensor&, const at::Tensor&, int64_t) {
  error_ = "this gspo was built without CUDA";
  return false;
}

at::Tensor DecodeGraph::replay_slots(const at::Tensor&, const at::Tensor&) { return {}; }

#endif

const at::Tensor& DecodeGraph::routes() const {
  static const at::Tensor none;
  return impl_ ? impl_->routes : none;
}

DecodeGraph::DecodeGraph() = default;
DecodeGraph::~DecodeGraph() = default;
void DecodeGraph::reset() { impl_.reset(); }
bool DecodeGraph::ready() const { return impl_ != nullptr; }

}  // namespace gspo::rollout
