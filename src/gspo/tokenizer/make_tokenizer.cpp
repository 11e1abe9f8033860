// tokenizer.h's factory: the one place a spec or a file meets a concrete tokenizer (byte-level, Hugging Face BPE,
// llama2.c pieces).
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

#include "gspo/core/error.h"
#include "gspo/tokenizer/byte_tokenizer.h"
#include "gspo/tokenizer/hf_bpe.h"
#include "gspo/tokenizer/pieces_tokenizer.h"
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::tokenizer {

namespace {
// A Hugging Face tokenizer from its JSON; a field of the wrong type (a vocab id given as a string, say) is a
// DataError naming the file instead of an unexpected nlohmann exception.
std::unique_ptr<Tokenizer> make_hf(const std::string& tokenizer_json, const std::string& config_json,
                                   const std::string& origin) {
  try {
    return std::make_unique<HfBpeTokenizer>(tokenizer_json, config_json, origin);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(origin + ": tokenizer.json has a field of the wrong type or shape (" +
                    std::string(e.what()).substr(0, 200) + ")");
  }
}
}  // namespace

std::unique_ptr<Tokenizer> from_spec(const std::string& spec_json, const std::string& origin) {
  if (spec_json.empty()) throw DataError(origin + ": no tokenizer spec (the model file carries none and "
                                         "tokenizer.path is empty)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(spec_json);
  } catch (const nlohmann::json::exception& e) {
    throw DataError(origin + ": tokenizer spec is not valid JSON: " + e.what());
  }
  // A Hugging Face tokenizer.json itself, or gspo's wrapper {"type": "hf", "tokenizer": {...}, "config": {...}}.
  if (j.contains("model") && j["model"].is_object()) return make_hf(spec_json, "", origin);
  const std::string type = j.value("type", "");
  if (type == "hf") {
    const std::string cfg = j.contains("config") ? j["config"].dump() : "";
    if (!j.contains("tokenizer")) throw DataError(origin + ": an 'hf' tokenizer spec needs a 'tokenizer' object");
    return make_hf(j.at("tokenizer").dump(), cfg, origin);
  }
  if (type == "pieces") {
    try {
      return std::make_unique<PiecesTokenizer>(j.at("pieces").get<std::vector<std::string>>(),
                                               j.at("scores").get<std::vector<float>>(), j.value("bos", int64_t{-1}),
                                               j.value("eos", int64_t{-1}), j.value("add_bos", false));
    } catch (const nlohmann::json::exception& e) {
      throw DataError(origin + ": pieces tokenizer spec needs 'pieces' and 'scores' lists (" + e.what() + ")");
    }
  }
  if (type == "none") throw DataError(origin + ": the model carries no tokenizer; give one with tokenizer.path / --tokenizer");
  if (type == "byte") {
    std::map<std::string, int64_t> specials;
    const nlohmann::json table = j.value("special_tokens", nlohmann::json::object());
    for (const auto& [k, v] : table.items()) {
      if (!v.is_number_integer())
        throw DataError(origin + ": tokenizer special token '" + k + "' must have an integer id (got " + v.dump() + ")");
      specials[k] = v.get<int64_t>();
    }
    return std::make_unique<ByteTokenizer>(specials, j.value("add_bos", false));
  }
  throw DataError(origin + ": unknown tokenizer type '" + type + "' (supported: byte, pieces, hf, or a tokenizer.json)");
}

std::unique_ptr<Tokenizer> from_path_or_spec(const std::string& path, const std::string& embedded_spec,
                                             const std::string& model) {
  return path.empty() ? from_spec(embedded_spec, model) : from_file(path);
}

std::unique_ptr<Tokenizer> from_file(const std::string& path_in) {
  // A directory: its tokenizer.json, with tokenizer_config.json beside it when present.
  std::string path = path_in;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    path = path_in + "/tokenizer.json";
    const std::string cfg_path = path_in + "/tokenizer_config.json";
    std::stringstream a, b;
    struct stat cs {};
    if (::stat(cfg_path.c_str(), &cs) == 0) {  // present: it must be a readable, non-empty file (never guessed around)
      if (S_ISDIR(cs.st_mode)) throw DataError(cfg_path + ": is a directory, not a tokenizer_config.json file");
      std::ifstream cfg(cfg_path, std::ios::binary);
      if (!cfg) throw IoError("cannot read '" + cfg_path + "': " + std::strerror(errno));
      b << cfg.rdbuf();
      if (b.str().find_first_not_of(" \t\r\n") == std::string::npos)
        throw DataError(cfg_path + ": the file is empty (expected a JSON object with eos_token, bos_token, ...)");
    }
    std::ifstream tj(path, std::ios::binary);
    if (!tj) throw IoError("cannot read '" + path + "': " + std::strerror(errno));
    a << tj.rdbuf();
    if (a.str().empty()) throw DataError(path + ": the file is empty (expected a Hugging Face tokenizer.json)");
    return make_hf(a.str(), b.str(), path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot read tokenizer file '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) throw DataError(path + ": the file is empty (expected a tokenizer spec or tokenizer.json)");
  return from_spec(ss.str(), path);
}

}  // namespace gspo::tokenizer
