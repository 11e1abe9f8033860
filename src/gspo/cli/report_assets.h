// The scripts `gspo report` inlines into its page, built into the binary (cmake/GspoReportAssets.cmake: the pinned
// environment's plotly/package_data/plotly.min.js and src/gspo/cli/report_app.js), so a report needs neither Python
// nor a network, when made or when opened.
#pragma once
#include <string_view>

namespace gspo::cli {

// plotly.js; empty when the build found no plotly package (the report then refuses, saying how to get it).
std::string_view plotly_js();
// The report's own script: charts, step cursor, smoothing, rollout browser (reads the page's JSON data).
std::string_view report_app_js();

}  // namespace gspo::cli
