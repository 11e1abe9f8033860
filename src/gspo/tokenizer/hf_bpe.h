// Hugging Face tokenizer.json with a byte-level BPE model (GPT-2, Qwen2/2.5/3, Llama-3 families); ill-formed
// UTF-8 input is first repaired to U+FFFD (utf8.h) as a caller of Hugging Face tokenizers must decode it;
// added/special tokens matched first on the raw text, NFC normaliser, the Split pre-tokenizer regex (PCRE2 with
// Unicode properties), the GPT-2 byte-to-unicode mapping, BPE merges applied by rank, byte-level decoding.
// Non-goals: WordPiece/Unigram models, byte-fallback SentencePiece BPE, dropout.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "gspo/tokenizer/tokenizer.h"

namespace gspo::tokenizer {

class HfBpeTokenizer : public Tokenizer {
 public:
  // `tokenizer_json`: the tokenizer.json text; `config_json`: tokenizer_config.json text or "" (names the BOS, EOS
  // and PAD tokens). Throws DataError naming `origin` for anything unsupported.
  HfBpeTokenizer(const std::string& tokenizer_json, const std::string& config_json, const std::string& origin);
  ~HfBpeTokenizer() override;

  std::vector<int64_t> encode(const std::string& text) const override;
  std::vector<int64_t> encode_text(const std::string& text) const override;
  std::string token_bytes(int64_t id, bool with_special) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  // The id of a token string (vocabulary or added), -1 when unknown.
  int64_t token_id(const std::string& token) const;

 private:
  struct Regex;
  // encode() when `specials`, else encode_text(): a special token's string found in the text stays in the plain
  // span around it (as `tokenizers` does with encode_special_tokens: the match is skipped whole).
  std::vector<int64_t> encode_added(const std::string& text, bool specials) const;
  void encode_plain(const std::string& text, std::vector<int64_t>& out) const;
  void bpe(const std::string& piece, std::vector<int64_t>& out) const;

  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<std::string> id_to_token_;             // byte-level token strings ("" for gaps)
  std::unordered_map<std::string, int> merge_rank_;  // "a b" -> rank
  struct Added {
    std::string content;
    int64_t id;
    bool special;
  };
  std::vector<Added> added_;                         // longest content first
  std::unordered_map<int64_t, size_t> added_by_id_;
  bool nfc_ = false;
  std::vector<std::unique_ptr<Regex>> splits_;       // Split pre-tokenizers, applied in order
  int64_t vocab_size_ = 0;
  mutable std::mutex cache_mu_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

}  // namespace gspo::tokenizer
