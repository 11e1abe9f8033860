// Per-phase memory peaks (core/resources.h): a reset starts the resident high-water mark afresh while the
// whole-process peak keeps what came before.
#include <catch2/catch.hpp>

#include <cstring>
#include <memory>

#include "gspo/core/resources.h"

using namespace gspo;

TEST_CASE("resetting the phase peak forgets a freed buffer: the whole-process peak keeps it", "[resources]") {
  const c10::Device cpu(c10::kCPU);
  constexpr int64_t kBytes = 256LL << 20;
  REQUIRE(core::reset_phase_peaks(cpu));  // Linux lets a process clear its own VmHWM
  const int64_t before = core::phase_peak_bytes(cpu);
  {
    // new[] of this size is its own mmap in glibc, so delete[] returns it to the kernel.
    std::unique_ptr<char[]> buf(new char[kBytes]);
    std::memset(buf.get(), 1, kBytes);  // touch every page: resident
    const volatile char sink = buf[kBytes - 1];
    (void)sink;
  }
  const int64_t with_buffer = core::phase_peak_bytes(cpu);
  CHECK(with_buffer >= before + kBytes * 9 / 10);
  REQUIRE(core::reset_phase_peaks(cpu));
  const int64_t after = core::phase_peak_bytes(cpu);
  CHECK(after > 0);
  CHECK(after < with_buffer - kBytes / 2);
  CHECK(core::peak_rss_bytes() >= with_buffer);  // still the whole-process peak
  CHECK(core::peak_device_bytes(cpu) == 0);
}
