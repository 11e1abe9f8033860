#include <iostream>

#include "gspo/cli/commands.h"
#include "gspo/config/load.h"

namespace gspo::cli {

int config(const ConfigArgs& a) {
  if (a.reference) {
    std::cout << config::reference_markdown();
    return 0;
  }
  auto cfg = config::load(a.config, a.overrides);
  std::cout << "# resolved config" << (a.config.empty() ? " (defaults)" : " from " + a.config) << "\n"
            << config::to_yaml(cfg);
  return 0;
}

}  // namespace gspo::cli
