#include "gspo/tokenizer/byte_tokenizer.h"

#include "gspo/core/error.h"

namespace gspo::tokenizer {

ByteTokenizer::ByteTokenizer(std::map<std::string, int64_t> specials, bool add_bos) {
  specials_ = std::move(specials);
  add_bos_ = add_bos;
  for (const auto& [name, id] : specials_) {
    if (id < 256) throw DataError("byte tokenizer: special token '" + name + "' has id " + std::to_string(id) +
                                  ", which collides with the byte ids 0..255");
    names_[id] = name;
    vocab_size_ = std::max(vocab_size_, id + 1);
    if (name == "<|bos|>") bos_id_ = id;
    if (name == "<|eos|>") eos_id_ = id;
    if (name == "<|pad|>") pad_id_ = id;
  }
}

std::vector<int64_t> ByteTokenizer::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  ids.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    bool matched = false;
    if (text[i] == '<') {
      for (const auto& [name, id] : specials_) {
        if (text.compare(i, name.size(), name) == 0) {
          ids.push_back(id);
          i += name.size();
          matched = true;
          break;
        }
      }
    }
    if (!matched) ids.push_back(static_cast<unsigned char>(text[i++]));
  }
  return ids;
}

std::vector<int64_t> ByteTokenizer::encode_text(const std::string& text) const {
  std::vector<int64_t> ids(text.size());
  for (size_t i = 0; i < text.size(); ++i) ids[i] = static_cast<unsigned char>(text[i]);
  return ids;
}

std::string ByteTokenizer::token_bytes(int64_t id, bool with_special) const {
  if (id >= 0 && id < 256) return std::string(1, static_cast<char>(id));
  auto it = names_.find(id);
  if (it != names_.end()) return with_special ? it->second : "";
  throw DataError("byte tokenizer: token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(vocab_size_) + ")");
}

}  // namespace gspo::tokenizer
