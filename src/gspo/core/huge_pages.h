// Transparent huge pages for LibTorch's large CPU tensors. LibTorch's CPU allocator backs allocations >= 2 MiB with
// huge pages (2 MiB alignment + madvise(MADV_HUGEPAGE)) only when THP_MEM_ALLOC_ENABLE=1 is in the environment the
// first time it allocates (c10 reads the variable once). Huge pages raise this machine's read bandwidth and batch-1
// decode by ~15% (docs/perf/limits.md), so gspo turns them on by default. Non-goal: changing the kernel's THP mode
// (with /sys/kernel/mm/transparent_hugepage/enabled = never the madvise is a no-op).
#pragma once

namespace gspo::core {

// Sets THP_MEM_ALLOC_ENABLE=1 unless the environment already has a value (a user's 0 or 1 wins). Call it first thing
// in main, before any LibTorch tensor exists: later calls cannot change what c10 has already read. Returns true when
// it set the variable (false when the user had).
bool default_huge_pages();

// What the environment says now: "1"/"0"/"" (unset), for reports.
const char* huge_pages_setting();

}  // namespace gspo::core
