// `gspo tokenize`: JSON lines on stdin -> JSON lines on stdout, for debugging prompts, templates and tokenizers.
#include <nlohmann/json.hpp>

#include <iostream>

#include "gspo/cli/eval_cmd.h"
#include "gspo/core/error.h"
#include "gspo/core/json_line.h"
#include "gspo/model/policy.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::cli {

int tokenize(const TokenizeArgs& a) {
  std::unique_ptr<tokenizer::Tokenizer> tok;
  const bool model_file = a.tokenizer.size() > 3 && a.tokenizer.compare(a.tokenizer.size() - 3, 3, ".pt") == 0;
  if (model_file) {
    auto policy = model::Policy::load(a.tokenizer);
    tok = tokenizer::from_spec(policy.tokenizer_json(), a.tokenizer);
  } else {
    tok = tokenizer::from_file(a.tokenizer);
  }
  std::string line;
  for (int64_t n = 1; std::getline(std::cin, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = "stdin:" + std::to_string(n);
    auto j = core::parse_json_object(line, where);
    nlohmann::ordered_json out;
    if (a.decode) {
      if (!j.contains("ids") || !j["ids"].is_array()) throw DataError(where + ": --decode needs {\"ids\": [...]}");
      std::vector<int64_t> ids;
      for (const auto& v : j["ids"]) {
        if (!v.is_number_integer()) throw DataError(where + ": ids must be integers");
        ids.push_back(v);
      }
      out["text"] = tok->decode(ids, a.with_special);
      out["ids"] = ids;
    } else {
      if (!j.contains("text") || !j["text"].is_string()) throw DataError(where + ": needs {\"text\": \"...\"}");
      const std::string text = j["text"];
      auto ids = tok->encode(text);
      out["text"] = text;
      out["ids"] = ids;
      if (a.tokens) {
        std::vector<std::string> pieces;
        for (auto id : ids) pieces.push_back(tok->token_bytes(id, true));
        out["tokens"] = pieces;
      }
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}

}  // namespace gspo::cli
