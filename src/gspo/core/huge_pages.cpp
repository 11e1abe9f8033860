#include "gspo/core/huge_pages.h"

#include <cstdlib>

namespace gspo::core {

namespace {
constexpr const char* kVar = "THP_MEM_ALLOC_ENABLE";
}  // namespace

bool default_huge_pages() {
  if (std::getenv(kVar) != nullptr) return false;
  return setenv(kVar, "1", /*overwrite=*/0) == 0;
}

const char* huge_pages_setting() {
  const char* v = std::getenv(kVar);
  return v ? v : "";
}

}  // namespace gspo::core
