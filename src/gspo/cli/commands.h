// The subcommands' bodies. apps/gspo/main.cpp parses flags into these structs and calls them; each returns
// the process exit code for success paths and throws gspo::Error subclasses otherwise.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gspo::cli {

struct GenerateArgs {
  std::string model;                 // policy .pt
  std::string adapter;               // "" = none; else a directory of LoRA adapters merged into the model
  std::string tokenizer;             // "" = embedded
  std::vector<std::string> prompts;  // texts
  std::vector<std::string> prompt_ids;  // comma/space separated id lists (alternative to prompts)
  int64_t samples = 1;
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;
  int64_t max_new_tokens = 64;
  int64_t min_new_tokens = 0;        // EOS and stop strings suppressed before this many tokens; 0 = off
  std::vector<std::string> stop;
  int64_t seed = 0;
  bool json = false;
  std::string device = "cpu";
};
int generate(const GenerateArgs& a);

struct InspectArgs {
  std::string model;
  std::string adapter;
  bool json = false;
  std::string device = "cpu";
};
int inspect(const InspectArgs& a);

struct ConfigArgs {
  std::string config;                // "" = defaults
  std::vector<std::string> overrides;
  bool reference = false;            // print the options reference (Markdown) instead
  bool metrics = false;              // print the metrics.jsonl fields (Markdown) instead
  bool json = false;                 // with metrics: as JSON (what tests/dist/compare_runs.py reads)
};
int config(const ConfigArgs& a);

// Parses "1, 2 3" into ids; throws ConfigError naming `flag` on anything else.
std::vector<int64_t> parse_ids(const std::string& text, const std::string& flag);

}  // namespace gspo::cli
