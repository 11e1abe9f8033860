// Encode throughput (MB/s) of gspo's Hugging Face BPE tokenizer against the Hugging Face `tokenizers` library (Rust,
// through its Python binding in the pinned environment: bench/reference_tokenize.py) on the same tokenizer.json and
// corpus in the same run, plus an id-for-id comparison of every document.
// Usage: bench_tokenizer TOKENIZER CORPUS.jsonl WORK_DIR
//   TOKENIZER     a tokenizer.json or a directory holding one (both sides load the same file)
//   CORPUS.jsonl  JSON lines {"text": ...} (bench/make_tokenizer_corpus.py)
//   WORK_DIR      where the reference writes its ids (WORK_DIR/reference_ids.jsonl)
// Both sides: one thread, no special tokens added, one warm-up pass over the whole corpus, best of 3 passes.
// Exit status: 0 when the reference ran and every document's ids are identical, 1 otherwise, 2 on bad usage.
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "gspo/tokenizer/tokenizer.h"
#include "configured_paths.h"

using namespace gspo;

namespace {

std::string sh_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

// The value of a `key=value` line in the reference's output, or "" when there is none.
std::string value_of(const std::string& out, const std::string& key) {
  const std::string k = key + "=";
  for (size_t pos = 0; pos < out.size();) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    if (out.compare(pos, k.size(), k) == 0) return out.substr(pos + k.size(), end - pos - k.size());
    pos = end + 1;
  }
  return "";
}

double number(const std::string& s) {
  try {
    return s.empty() ? -1 : std::stod(s);
  } catch (...) {
    return -1;
  }
}

// JSON-quoted, so whitespace and control characters show; invalid UTF-8 (a cut multi-byte char) becomes U+FFFD.
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string show_ids(const tokenizer::Tokenizer& tok, const std::vector<int64_t>& ids, size_t from, size_t n) {
  std::string ids_s, toks_s;
  for (size_t i = from; i < std::min(ids.size(), from + n); ++i) {
    ids_s += (ids_s.empty() ? "" : ",") + std::to_string(ids[i]);
    std::string t;
    try {
      t = quoted(tok.token_bytes(ids[i], true));
    } catch (...) {
      t = "<id out of range>";
    }
    toks_s += " " + t;
  }
  if (from + n < ids.size()) ids_s += ",...";
  return "[" + ids_s + "]" + toks_s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s TOKENIZER CORPUS.jsonl WORK_DIR\n", argv[0]);
    return 2;
  }
  auto tok = tokenizer::from_file(argv[1]);
  std::vector<std::string> docs;
  std::ifstream in(argv[2]);
  if (!in) {
    std::fprintf(stderr, "cannot read corpus %s\n", argv[2]);
    return 2;
  }
  size_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    docs.push_back(nlohmann::json::parse(line)["text"]);
    bytes += docs.back().size();
  }
  std::printf("corpus: %zu documents, %.2f MB (%s)\n", docs.size(), bytes / 1e6, argv[2]);
  std::printf("tokenizer: %s\n", argv[1]);

  double best = 1e300;
  std::vector<std::vector<int64_t>> ours;
  for (int rep = 0; rep < 4; ++rep) {  // the first pass fills the BPE cache, like the reference's warm-up pass
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::vector<int64_t>> ids;
    ids.reserve(docs.size());
    for (const auto& d : docs) ids.push_back(tok->encode(d));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rep > 0 && s < best) best = s;
    ours = std::move(ids);
  }
  const double mbs = bytes / 1e6 / best;
  std::printf("%-46s %8.2f MB/s\n", "gspo encode (C++, 1 thread)", mbs);
  std::fflush(stdout);

  // The reference: HF tokenizers on the same file and corpus; it prints key=value lines and writes ids as JSON lines.
  const std::string ref_ids = std::string(argv[3]) + "/reference_ids.jsonl";
  std::remove(ref_ids.c_str());  // never compare against a previous run's ids
  const std::string script = std::string(GSPO_SOURCE_DIR) + "/bench/reference_tokenize.py";
  const std::string cmd = sh_quote(GSPO_PYTHON) + " " + sh_quote(script) + " " + sh_quote(argv[1]) + " " +
                          sh_quote(argv[2]) + " " + sh_quote(ref_ids) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  const int status = p ? pclose(p) : -1;
  const bool ref_ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const double ref = ref_ok ? number(value_of(out, "encode_mb_per_s")) : -1;
  if (ref < 0) {
    std::printf("%-46s   failed\n", "HF tokenizers encode (Rust, 1 thread)");
    std::printf("reference command: %s\nreference output:\n%s\n", cmd.c_str(), out.c_str());
    return 1;
  }
  std::printf("%-46s %8.2f MB/s\n", "HF tokenizers encode (Rust, 1 thread)", ref);
  std::printf("%-46s %8.2f\n", "ratio gspo / HF tokenizers (1 thread each)", mbs / ref);
  const double batch = number(value_of(out, "encode_batch_mb_per_s"));
  if (batch > 0) {
    const std::string label =
        "HF tokenizers encode_batch (Rust, " + value_of(out, "encode_batch_threads") + " threads)";
    std::printf("%-46s %8.2f MB/s  (multi-threaded, for information; ids %s identical)\n", label.c_str(), batch,
                value_of(out, "encode_batch_identical").c_str());
  } else if (!value_of(out, "encode_batch_error").empty()) {
    std::printf("HF tokenizers encode_batch: failed: %s\n", value_of(out, "encode_batch_error").c_str());
  }
  std::printf("reference: tokenizers %s, python %s\n", value_of(out, "tokenizers_version").c_str(),
              value_of(out, "python").c_str());

  // Id-for-id comparison, document by document; the first few mismatches in detail.
  std::ifstream rin(ref_ids);
  size_t same = 0, n = 0, shown = 0;
  const size_t show_max = 5;
  std::string details;
  for (std::string line; n < ours.size() && std::getline(rin, line);) {
    if (line.empty()) continue;
    std::vector<int64_t> theirs;
    bool parsed = true;
    try {
      theirs = nlohmann::json::parse(line).get<std::vector<int64_t>>();
    } catch (...) {
      parsed = false;
    }
    const auto& mine = ours[n];
    if (parsed && theirs == mine) {
      ++same;
    } else if (shown++ < show_max) {
      const std::string& d = docs[n];
      char head[256];
      if (!parsed) {
        std::snprintf(head, sizeof head, "MISMATCH document %zu (%zu bytes): unreadable reference line\n", n, d.size());
        details += head + std::string("  text: ") + quoted(d.substr(0, 160)) + "\n";
      } else {
        size_t k = 0;
        while (k < mine.size() && k < theirs.size() && mine[k] == theirs[k]) ++k;
        size_t at = 0;  // byte offset of the first difference: the common prefix's bytes
        for (size_t i = 0; i < k; ++i) at += tok->token_bytes(mine[i], true).size();
        at = std::min(at, d.size());
        std::snprintf(head, sizeof head,
                      "MISMATCH document %zu (%zu bytes): first difference at token %zu (byte %zu); %zu tokens gspo, "
                      "%zu HF\n",
                      n, d.size(), k, at, mine.size(), theirs.size());
        const size_t from = at > 40 ? at - 40 : 0;
        details += head;
        details += "  text around it: " + quoted(d.substr(from, 120)) + "\n";
        details += "  gspo from token " + std::to_string(k) + ": " + show_ids(*tok, mine, k, 8) + "\n";
        details += "  HF   from token " + std::to_string(k) + ": " + show_ids(*tok, theirs, k, 8) + "\n";
      }
    }
    ++n;
  }
  if (n < ours.size())
    std::printf("reference wrote ids for only %zu of %zu documents (%s)\n", n, ours.size(), ref_ids.c_str());
  std::printf("identical ids: %zu/%zu documents%s\n", same, docs.size(), same == docs.size() ? "" : "  <-- MISMATCH");
  if (!details.empty()) {
    std::printf("%s", details.c_str());
    if (shown > show_max) std::printf("... and %zu more mismatching documents\n", shown - show_max);
  }
  return same == docs.size() ? 0 : 1;
}
