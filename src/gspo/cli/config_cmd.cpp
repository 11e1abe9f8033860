#include <iostream>

#include "gspo/cli/commands.h"
#include "gspo/config/load.h"
#include "gspo/core/error.h"
#include "gspo/train/metrics/metrics.h"

namespace gspo::cli {

int config(const ConfigArgs& a) {
  if (a.metrics) {
    std::cout << (a.json ? train::metrics_schema_json() : train::metrics_reference_markdown());
    return 0;
  }
  if (a.json) throw ConfigError("--json goes with --metrics");
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
