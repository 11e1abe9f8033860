#include "gspo/core/torch_compat.h"

#include <torch/script.h>
#include <torch/version.h>

#include <ATen/CPUGeneratorImpl.h>

#ifdef GSPO_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include <fstream>
#include <sstream>

namespace gspo::compat {

std::string torch_version() {
  std::ostringstream os;
  os << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH;
  return os.str();
}

at::Generator make_cpu_generator(uint64_t seed) { return at::detail::createCPUGenerator(seed); }

torch::jit::Module load_module(const std::string& path, c10::Device device,
                               std::unordered_map<std::string, std::string>& extra_files) {
  return torch::jit::load(path, device, extra_files);
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

}  // namespace gspo::compat

namespace gspo::compat {

int64_t peak_device_bytes(c10::Device device) {
#ifdef GSPO_WITH_CUDA
  if (device.is_cuda()) {
    // Index 0 of each stat array is the aggregate over pool types (StatType::AGGREGATE in 1.13 and 2.x).
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.allocated_bytes[0].peak;
  }
#endif
  (void)device;
  return 0;
}

}  // namespace gspo::compat
