#include "gspo/core/resources.h"

#include <torch/version.h>

#ifdef GSPO_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <fstream>
#include <sstream>

namespace gspo::core {
namespace {

// Whole-run maxima of the values the phase resets clear: VmHWM, and each CUDA device's allocator peak.
std::atomic<int64_t> g_rss_before_reset{0};
constexpr size_t kMaxDevices = 64;
std::array<std::atomic<int64_t>, kMaxDevices> g_device_before_reset{};

void fold_max(std::atomic<int64_t>& into, int64_t v) {
  int64_t cur = into.load();
  while (v > cur && !into.compare_exchange_weak(cur, v)) {
  }
}

// VmHWM: resident high-water mark since the start or the last clear_refs reset, in bytes; 0 when unknown.
int64_t vm_hwm_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) {
      std::istringstream is(line.substr(6));
      int64_t kb = 0;
      is >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

#ifdef GSPO_WITH_CUDA
c10::DeviceIndex cuda_index(c10::Device device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}

// Allocator peak since the start or its last resetPeakStats. Index 0 of each stat array is the aggregate over pool
// types (StatType::AGGREGATE).
int64_t allocator_peak(c10::DeviceIndex index) {
  return c10::cuda::CUDACachingAllocator::getDeviceStats(index).allocated_bytes[0].peak;
}
#endif

}  // namespace

std::string torch_version() {
  std::ostringstream os;
  os << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH;
  return os.str();
}

int64_t peak_rss_bytes() { return std::max(g_rss_before_reset.load(), vm_hwm_bytes()); }

int64_t peak_device_bytes(c10::Device device) {
#ifdef GSPO_WITH_CUDA
  if (device.is_cuda()) {
    const auto index = cuda_index(device);
    const int64_t before = static_cast<size_t>(index) < kMaxDevices ? g_device_before_reset[index].load() : 0;
    return std::max(before, allocator_peak(index));
  }
#endif
  (void)device;
  return 0;
}

bool reset_phase_peaks(c10::Device device) {
#ifdef GSPO_WITH_CUDA
  if (device.is_cuda()) {
    const auto index = cuda_index(device);
    if (static_cast<size_t>(index) < kMaxDevices) {
      fold_max(g_device_before_reset[index], allocator_peak(index));
      c10::cuda::CUDACachingAllocator::resetPeakStats(index);
    }
  }
#endif
  (void)device;
  fold_max(g_rss_before_reset, vm_hwm_bytes());
  std::ofstream out("/proc/self/clear_refs");
  out << "5";  // 5: reset the peak resident set size (proc(5))
  out.flush();
  return out.good();
}

int64_t phase_peak_bytes(c10::Device device) {
#ifdef GSPO_WITH_CUDA
  if (device.is_cuda()) return allocator_peak(cuda_index(device));
#endif
  (void)device;
  return vm_hwm_bytes();
}

int cuda_capability_major(c10::Device device) {
#ifdef GSPO_WITH_CUDA
  if (device.is_cuda()) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, cuda_index(device)) != cudaSuccess) return 0;
    return prop.major;
  }
#endif
  (void)device;
  return 0;
}

int64_t available_device_bytes(c10::Device device) {
#ifdef GSPO_WITH_CUDA
  if (device.is_cuda()) {
    const auto index = cuda_index(device);
    c10::cuda::CUDAGuard guard(index);
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0;
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    return static_cast<int64_t>(free) + stats.reserved_bytes[0].current - stats.allocated_bytes[0].current;
  }
#endif
  (void)device;
  return 0;
}

void release_free_host_memory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace gspo::core
