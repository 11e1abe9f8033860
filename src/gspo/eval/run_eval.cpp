// `gspo eval`: sets loaded, an unfinished eval in --out resumed, K samples per problem written as they are graded,
// summary.json and the table at the end.
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sys/stat.h>

#include "gspo/core/device.h"
#include "gspo/core/error.h"
#include "gspo/core/fs.h"
#include "gspo/core/log.h"
#include "gspo/core/resources.h"
#include "gspo/core/version.h"
#include "gspo/eval/eval.h"
#include "gspo/eval/evaluator.h"
#include "gspo/eval/resume.h"
#include "gspo/eval/set_summary.h"
#include "gspo/io/model_load.h"
#include "gspo/io/checkpoint.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::eval {
namespace {

void progress_bar(const std::string& name, size_t done, size_t total, size_t resumed, double elapsed) {
  const double frac = total ? static_cast<double>(done) / total : 1.0;
  const size_t fresh = done - resumed;
  const double eta = fresh ? elapsed / fresh * (total - done) : 0.0;
  char bar[31];
  const int filled = static_cast<int>(frac * 30);
  for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
  bar[30] = 0;
  std::fprintf(stderr, "\r[%s] %s %zu/%zu problems %3.0f%%  elapsed %.0fs  ETA %.0fs   ", name.c_str(), bar, done, total,
               100 * frac, elapsed, eta);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

int64_t file_bytes(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

// The tools section as it shapes the samples (episodes): the tools as listed and the limits.
nlohmann::ordered_json tools_identity(const config::ToolsOptions& t) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& s : t.list)
    list.push_back({{"name", s.name}, {"kind", config::name_of(s.kind)}, {"command", s.command},
                    {"description", s.description}, {"parameters", s.parameters.json}});
  return {{"list", list}, {"max_turns", t.max_turns}, {"max_calls_per_turn", t.max_calls_per_turn},
          {"max_output_tokens", t.max_output_tokens}, {"timeout_s", t.timeout_s}};
}

// What must be equal for an unfinished eval to be continued: model, data, prompt format, sampling and tools.
nlohmann::ordered_json identity(const config::Config& cfg, const std::string& model, const std::vector<std::string>& sets) {
  const auto sp = eval_sampling(cfg);
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& p : sets) files.push_back({{"path", p}, {"fnv1a64", core::file_fnv1a64(p)}});
  nlohmann::ordered_json sampling{{"temperature", sp.temperature}, {"top_p", sp.top_p}, {"top_k", sp.top_k},
                                  {"max_new_tokens", sp.max_new_tokens}, {"stop", sp.stop}, {"seed", cfg.rollout.seed}};
  // Recorded only when on, so an eval state written before the option existed still matches (and resumes).
  if (sp.min_new_tokens > 0) sampling["min_new_tokens"] = sp.min_new_tokens;
  nlohmann::ordered_json id{
      {"model", model}, {"model_bytes", file_bytes(model)}, {"datasets", files},
      {"samples", cfg.eval.samples}, {"max_problems", cfg.eval.max_problems}, {"since", cfg.eval.since},
      {"until", cfg.eval.until},
      {"sampling", sampling},
      {"prompt", {{"prompt_key", cfg.data.prompt_key}, {"answer_key", cfg.data.answer_key},
                  {"prompt_template", cfg.data.prompt_template},
                  {"chat_template", config::name_of(cfg.data.chat_template)},
                  {"system_prompt", cfg.data.system_prompt}, {"enable_thinking", cfg.data.enable_thinking}}},
      {"tokenizer", cfg.tokenizer.path}};
  if (!cfg.tools.list.empty()) id["tools"] = tools_identity(cfg.tools);  // only then: older states still match
  if (!cfg.model.adapter.empty())  // likewise
    id["adapter"] = {{"path", cfg.model.adapter},
                     {"fnv1a64", core::file_fnv1a64(io::adapter_file(cfg.model.adapter))}};
  return id;
}

// Decides between a fresh start and a resume in `dir`; returns the samples already done, or nullopt for a fresh
// start, for which nothing is written yet (start_out_dir, once the model has been loaded and the settings fit it).
std::optional<DoneSamples> prepare_out_dir(const std::string& dir, const nlohmann::ordered_json& id, bool overwrite,
                                           int64_t K) {
  const std::string summary = dir + "/summary.json", samples = dir + "/samples.jsonl", state = dir + "/eval_state.json";
  if (overwrite) {
    for (const auto& f : {summary, samples, state}) std::remove(f.c_str());
  } else if (core::exists(summary)) {
    throw ConfigError("--out '" + dir + "' already holds a finished eval (summary.json); pass --overwrite to replace "
                      "it, or choose another --out");
  } else if (core::exists(state)) {
    auto before = nlohmann::json::parse(core::read_text(state), nullptr, false);
    const std::string diff = before.is_discarded() ? "eval_state.json is not JSON" : first_difference(before, id);
    if (!diff.empty())
      throw ConfigError("--out '" + dir + "' holds an unfinished eval with other settings (" + diff + "); pass "
                        "--overwrite to start over, or choose another --out");
    return read_done_samples(samples, K);
  } else if (core::non_empty_file(samples)) {
    throw ConfigError("--out '" + dir + "' holds samples.jsonl from an eval without eval_state.json; pass "
                      "--overwrite to replace it, or choose another --out");
  }
  return std::nullopt;
}

// A fresh eval's eval_state.json: from here on a rerun with other settings is refused (or resumes with the same).
void start_out_dir(const std::string& dir, const nlohmann::ordered_json& id) {
  core::ensure_dir(dir);
  core::atomic_write(dir + "/eval_state.json", id.dump(1) + "\n");
}

// Rewrites samples.jsonl with the complete problems only (lines of a problem cut off are sampled again).
void keep_done_lines(const std::string& path, const DoneSamples& done) {
  std::string text;
  for (const auto& [set, problems] : done.sets)
    for (const auto& lines : problems)
      for (const auto& l : lines) text += l.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  core::atomic_write(path, text);
}

// The sets to evaluate: --dataset, else eval.datasets, else data.path; two with the same name are refused. A --dataset
// or data.path set is graded by the reward section (verifier "reward"), an eval.datasets one by its own verifier.
std::vector<config::EvalSetSpec> eval_sets(const config::Config& cfg, const EvalRequest& req) {
  std::vector<config::EvalSetSpec> sets;
  for (const auto& p : req.datasets) sets.push_back({p, "reward"});
  if (sets.empty()) sets = cfg.eval.datasets;
  if (sets.empty() && !cfg.data.path.empty()) sets.push_back({cfg.data.path, "reward"});
  std::vector<std::string> paths;
  for (const auto& s : sets) paths.push_back(s.path);
  if (paths.empty() && !cfg.data.mix.empty())  // each with its own keys: not one set, not read with data's keys
    throw ConfigError("no dataset: data.mix is training data, not an eval set; give --dataset or set eval.datasets");
  if (paths.empty()) throw ConfigError("no dataset: give --dataset, or set eval.datasets or data.path");
  for (size_t i = 0; i < paths.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (set_name(paths[i]) == set_name(paths[j]))
        throw ConfigError("datasets '" + paths[j] + "' and '" + paths[i] + "' have the same name '" +
                          set_name(paths[i]) + "'; samples.jsonl and the summary name sets by it, so evaluate them "
                          "in separate runs");
  return sets;
}

}  // namespace

namespace {
// The evaluated model (model.adapter merged) on model.device, its tokenizer, and data.chat_template auto resolved in
// `cfg` from it.
io::LoadedModel load_eval_model(config::Config& cfg, const std::string& model_path) {
  io::ModelLoad what;
  what.file = model_path;
  what.device = core::resolve_device(cfg.model.device, "model.device");
  what.merge = cfg.model.adapter;
  what.check_contract = false;  // (gspo inspect checks it)
  what.tokenizer_path = cfg.tokenizer.path;
  auto loaded = io::load_model(what);
  io::resolve_chat_template(cfg, loaded);
  return loaded;
}
}  // namespace

std::vector<SetSummary> run_eval(const config::Config& cfg_in, const EvalRequest& req) {
  config::Config cfg = cfg_in;  // what the loaded model resolves (data.chat_template auto) goes in here
  const std::string model_path = req.model.empty() ? cfg.model.path : req.model;
  if (model_path.empty()) throw ConfigError("no model: give --model or set model.path");
  const auto specs = eval_sets(cfg, req);
  std::vector<std::string> paths;
  for (const auto& s : specs) paths.push_back(s.path);
  const int64_t K = cfg.eval.samples;
  const auto id = identity(cfg, model_path, paths);
  auto prepared = prepare_out_dir(req.out_dir, id, req.overwrite, K);
  const Standings standings(req.standings);  // read before the model: a bad pack fails at once

  auto loaded = load_eval_model(cfg, model_path);
  auto& policy = *loaded.policy;
  const auto& tok = loaded.tok;
  const int64_t max_prompt_tokens = eval_prompt_budget(cfg, policy.manifest().max_seq_len, model_path);
  std::vector<EvalSet> sets;
  for (const auto& path : paths) sets.push_back(load_eval_set(cfg, path, *tok, max_prompt_tokens, true));
  standings.check(sets);
  if (!prepared) start_out_dir(req.out_dir, id);
  DoneSamples done = prepared ? std::move(*prepared) : DoneSamples{};
  const bool resuming = !done.sets.empty() || done.dropped_lines > 0;
  if (resuming) keep_done_lines(req.out_dir + "/samples.jsonl", done);
  Evaluator evaluator(cfg, policy, *tok);
  std::ofstream samples_out(req.out_dir + "/samples.jsonl", std::ios::app);
  if (!samples_out) throw IoError("cannot write '" + req.out_dir + "/samples.jsonl'");
  std::vector<SetSummary> summaries;
  torch::NoGradGuard no_grad;

  for (size_t d = 0; d < paths.size(); ++d) {
    const auto& set = sets[d];
    Grader grader(grading_config(cfg, specs[d].verifier), set.rows, policy.device());
    std::vector<ProblemResult> results;
    const auto& earlier = done.sets[set.name];
    for (size_t i = 0; i < earlier.size() && i < set.rows.size(); ++i)
      results.push_back(result_from_lines(earlier[i], grader, set.rows[i]));
    if (!results.empty())
      log::info("{}: resuming after {} of {} problems already evaluated in {}", set.name, results.size(), set.rows.size(),
                req.out_dir);
    const size_t resumed = results.size();
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t start = resumed; start < set.rows.size(); start += evaluator.chunk()) {
      const size_t end = std::min(set.rows.size(), start + evaluator.chunk());
      auto graded = evaluator.run(set, d, grader, start, end);
      for (const auto& line : graded.sample_lines)
        samples_out << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      samples_out.flush();
      if (!samples_out) throw IoError("cannot write '" + req.out_dir + "/samples.jsonl' (disk full?)");
      for (auto& p : graded.problems) results.push_back(std::move(p));
      if (req.progress)
        progress_bar(set.name, end, set.rows.size(), resumed,
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    auto summary = summarize_set(set, stats_of(results), grader.math, standings);
    summary.verifier = grader.verifier->name();
    summary.skipped_prompts = set.skipped_prompts;  // too long for max_seq_len with max_new_tokens; not in the averages
    if (set.outside_dates > 0) summary.outside_dates = set.outside_dates;
    summary.source = SourceSummary{set.path, set.selected_rows, set.file_rows,
                                   id["datasets"][d]["fnv1a64"].get<std::string>()};  // hashed once, in identity()
    summaries.push_back(std::move(summary));
  }
  const auto sp = eval_sampling(cfg);
  nlohmann::ordered_json all{
      {"model", model_path},
      {"gspo_version", core::kVersion},
      {"libtorch_version", core::torch_version()},
      {"sampling", {{"samples", K}, {"temperature", sp.temperature}, {"top_p", sp.top_p}, {"top_k", sp.top_k},
                    {"max_new_tokens", sp.max_new_tokens}, {"min_new_tokens", sp.min_new_tokens}, {"stop", sp.stop},
                    {"seed", cfg.rollout.seed}, {"max_problems", cfg.eval.max_problems}, {"since", cfg.eval.since},
                    {"until", cfg.eval.until}}},
      {"datasets", summaries}};
  if (!cfg.tools.list.empty()) all["tools"] = tools_identity(cfg.tools);
  core::atomic_write(req.out_dir + "/summary.json", all.dump(1) + "\n");
  return summaries;
}

}  // namespace gspo::eval
