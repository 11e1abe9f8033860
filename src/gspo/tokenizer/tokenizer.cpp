// The interface's shared methods. The functions that pick a concrete tokenizer (from_spec, from_file,
// from_path_or_spec) are in make_tokenizer.cpp, the one file that knows them all: the tokenizers include this
// interface, and it includes none of them.
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::tokenizer {

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool with_special) const {
  std::string out;
  for (int64_t id : ids) out += token_bytes(id, with_special);
  return out;
}

std::vector<int64_t> Tokenizer::encode_prompt(const std::string& text) const {
  std::vector<int64_t> ids;
  auto body = encode(text);
  // A chat format that writes the BOS itself (deepseek_r1) must not get a second one.
  if (add_bos_ && bos_id_ >= 0 && (body.empty() || body.front() != bos_id_)) ids.push_back(bos_id_);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

}  // namespace gspo::tokenizer
