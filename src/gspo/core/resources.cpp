#include "gspo/core/resources.h"

#include <torch/version.h>

#ifdef GSPO_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <fstream>
#include <sstream>

namespace gspo::core {

std::string torch_version() {
  std::ostringstream os;
  os << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH;
  return os.str();
}

int64_t peak_rss_bytes() {
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

int64_t peak_device_bytes(c10::Device device) {
#ifdef GSPO_WITH_CUDA
  if (device.is_cuda()) {
    // Index 0 of each stat array is the aggregate over pool types (StatType::AGGREGATE).
    const auto index = device.has_index() ? device.index() : c10::cuda::current_device();
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    return stats.allocated_bytes[0].peak;
  }
#endif
  (void)device;
  return 0;
}

}  // namespace gspo::core
