#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "gspo/core/device.h"
#include "gspo/core/error.h"
#include "gspo/core/log.h"
#include "gspo/data/dataset.h"
#include "gspo/data/prompt_fit.h"
#include "gspo/eval/eval.h"
#include "gspo/eval/grade.h"
#include "gspo/core/fs.h"
#include "gspo/core/resources.h"
#include "gspo/core/version.h"
#include "gspo/model/policy.h"
#include "gspo/rollout/sampler.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::eval {
namespace {

void progress_bar(const std::string& name, size_t done, size_t total, double elapsed) {
  const double frac = total ? static_cast<double>(done) / total : 1.0;
  const double eta = done ? elapsed / done * (total - done) : 0.0;
  char bar[31];
  const int filled = static_cast<int>(frac * 30);
  for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
  bar[30] = 0;
  std::fprintf(stderr, "\r[%s] %s %zu/%zu problems %3.0f%%  elapsed %.0fs  ETA %.0fs   ", name.c_str(), bar, done, total,
               100 * frac, elapsed, eta);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

std::string base_name(const std::string& path) {
  std::string n = path.substr(path.find_last_of('/') + 1);
  return n.substr(0, n.rfind(".jsonl") == std::string::npos ? n.size() : n.rfind(".jsonl"));
}

}  // namespace

std::vector<nlohmann::ordered_json> run_eval(const config::Config& cfg, const EvalRequest& req) {
  if (req.samples < 1) throw ConfigError("--samples must be >= 1 (got " + std::to_string(req.samples) + ")");
  const std::string model_path = req.model.empty() ? cfg.model.path : req.model;
  if (model_path.empty()) throw ConfigError("no model: give --model or set model.path");
  auto datasets = req.datasets;
  if (datasets.empty() && !cfg.data.path.empty()) datasets.push_back(cfg.data.path);
  if (datasets.empty()) throw ConfigError("no dataset: give --dataset or set data.path");
  if (!req.overwrite && (core::exists(req.out_dir + "/summary.json") || core::non_empty_file(req.out_dir + "/samples.jsonl")))
    throw ConfigError("--out '" + req.out_dir + "' already holds an eval result (summary.json or samples.jsonl); pass "
                      "--overwrite to replace it, or choose another --out");
  core::ensure_dir(req.out_dir);

  auto policy = model::Policy::load(model_path, core::resolve_device(cfg.model.device, "model.device"));
  auto tok = cfg.tokenizer.path.empty() ? tokenizer::from_spec(policy.tokenizer_json(), model_path)
                                        : tokenizer::from_file(cfg.tokenizer.path);
  rollout::SamplingParams sp{cfg.rollout.temperature, cfg.rollout.top_p, cfg.rollout.top_k,
                             cfg.rollout.max_new_tokens, cfg.rollout.stop};
  sp.cuda_graphs = cfg.rollout.cuda_graphs;
  rollout::Sampler sampler(policy, *tok, sp);
  std::ofstream samples_out(req.out_dir + "/samples.jsonl");
  if (!samples_out) throw IoError("cannot write '" + req.out_dir + "/samples.jsonl'");
  std::vector<nlohmann::ordered_json> summaries;

  for (size_t d = 0; d < datasets.size(); ++d) {
    const std::string& path = datasets[d];
    auto rows = data::load_jsonl(path, cfg.data.prompt_key, cfg.data.answer_key);
    if (rows.empty()) throw DataError("dataset '" + path + "' has no examples");
    if (req.max_problems > 0 && static_cast<int64_t>(rows.size()) > req.max_problems) rows.resize(req.max_problems);
    const std::string name = base_name(path);
    const int64_t limit = policy.manifest().max_seq_len - cfg.rollout.max_new_tokens;
    const int64_t total = static_cast<int64_t>(rows.size());
    auto fit = data::fit_prompts(std::move(rows), cfg.data, *tok, limit, cfg.data.overlong_prompts == config::Overlong::kError);
    if (fit.dropped > 0) log::warn("{}: {}", name, data::describe_dropped(fit, total, limit));
    rows = std::move(fit.kept);
    Grader grader(cfg, rows);
    std::vector<ProblemResult> results;
    const auto t0 = std::chrono::steady_clock::now();
    const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, cfg.rollout.prompts_per_step));
    for (size_t start = 0; start < rows.size(); start += chunk) {
      const size_t end = std::min(rows.size(), start + chunk);
      std::vector<std::vector<int64_t>> prompts;
      std::vector<const data::Example*> exs;
      for (size_t i = start; i < end; ++i) {
        prompts.push_back(tok->encode_prompt(data::format_prompt(cfg.data, rows[i].prompt)));
        exs.push_back(&rows[i]);
      }
      // Keyed by (seed, dataset, sample index): results do not depend on the batch size (rollout.prompts_per_step).
      const rollout::NoiseKey noise{rollout::mix_seed(static_cast<uint64_t>(cfg.rollout.seed), d),
                                    static_cast<int64_t>(start) * req.samples};
      auto batch = sampler.generate(prompts, req.samples, noise);
      std::vector<std::vector<std::string>> texts(exs.size());
      std::vector<std::vector<int64_t>> lens(exs.size());
      for (int64_t r = 0; r < batch.num_rows(); ++r) {
        texts[r / req.samples].push_back(batch.response_text[r]);
        lens[r / req.samples].push_back(batch.response_lengths[r]);
      }
      auto graded = grader.grade(exs, texts, lens);
      for (size_t i = 0; i < exs.size(); ++i) {
        for (int64_t s = 0; s < req.samples; ++s) {
          nlohmann::ordered_json line{{"dataset", name}, {"index", start + i}, {"id", exs[i]->id}, {"sample", s},
                                      {"response", texts[i][s]}, {"reward", graded[i].rewards[s]},
                                      {"correct", static_cast<bool>(graded[i].correct[s])},
                                      {"detail", graded[i].details[s]}, {"tokens", lens[i][s]},
                                      {"finish", rollout::finish_name(batch.finish[i * req.samples + s])}};
          samples_out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
        }
        results.push_back(std::move(graded[i]));
      }
      samples_out.flush();
      if (req.progress)
        progress_bar(name, end, rows.size(), std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    auto summary = summarize(name, results, grader.math);
    summary["verifier"] = grader.verifier->name();
    summary["skipped_prompts"] = fit.dropped;  // too long for max_seq_len with max_new_tokens; not in the averages
    summary["source"] = {{"path", path}, {"rows", total}, {"fnv1a64", core::file_fnv1a64(path)}};
    summaries.push_back(summary);
  }
  const auto& r = cfg.rollout;
  nlohmann::ordered_json all{
      {"model", model_path},
      {"gspo_version", core::kVersion},
      {"libtorch_version", core::torch_version()},
      {"sampling", {{"samples", req.samples}, {"temperature", r.temperature}, {"top_p", r.top_p}, {"top_k", r.top_k},
                    {"max_new_tokens", r.max_new_tokens}, {"stop", r.stop}, {"seed", r.seed},
                    {"max_problems", req.max_problems}}},
      {"datasets", summaries}};
  core::atomic_write(req.out_dir + "/summary.json", all.dump(1) + "\n");
  return summaries;
}

}  // namespace gspo::eval
