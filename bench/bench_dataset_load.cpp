// Time and memory of loading a dataset through data::load_jsonl, the one reader every consumer takes (training,
// eval sets, gspo score): a JSONL file against the same rows as parquet (issue 66; docs/performance.md).
//   python3 bench/make_dataset_files.py 100000 /tmp/rows     (the same generated rows as rows.parquet and rows.jsonl)
//   build/bench/bench_dataset_load /tmp/rows/rows.parquet reward_model.ground_truth [PROMPT_KEY (auto)]
// Prints rows, seconds, the process's resident memory before the load, at its peak and after, the rows' own text,
// and the peak of Arrow's memory pool. Run one file per process: the peak is the process's.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "gspo/core/error.h"
#include "gspo/data/dataset.h"
#include "gspo/data/parquet.h"

namespace {

double resident_mib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_dataset_load PATH [ANSWER_KEY (answer) [PROMPT_KEY (auto)]]\n");
    return 2;
  }
  const std::string path = argv[1], answer_key = argc > 2 ? argv[2] : "answer", prompt_key = argc > 3 ? argv[3] : "auto";
  try {
    const double before = resident_mib();
    const auto t0 = std::chrono::steady_clock::now();
    const auto rows = gspo::data::load_jsonl(path, prompt_key, answer_key);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    double text = 0;
    for (const auto& ex : rows) text += static_cast<double>(ex.row.size() + ex.prompt.size() + ex.answer.size());
    std::printf("%s: %zu rows in %.3f s; resident %.1f MiB before, %.1f MiB at peak, %.1f MiB after; rows' text "
                "%.1f MiB; Arrow pool peak %.1f MiB\n",
                path.c_str(), rows.size(), seconds, before, static_cast<double>(ru.ru_maxrss) / 1024.0,
                resident_mib(), text / 1048576.0,
                static_cast<double>(gspo::data::parquet_peak_pool_bytes()) / 1048576.0);
  } catch (const gspo::Error& e) {
    std::fprintf(stderr, "%s: %s\n", e.kind(), e.what());
    return 1;
  }
  return 0;
}
