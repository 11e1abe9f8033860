// Byte-level tokenizer for tiny models: ids 0..255 are the bytes, special tokens follow.
#pragma once
#include "gspo/tokenizer/tokenizer.h"

namespace gspo::tokenizer {

class ByteTokenizer : public Tokenizer {
 public:
  // `specials`: name -> id, ids >= 256; names <|bos|>, <|eos|>, <|pad|> set the matching roles.
  ByteTokenizer(std::map<std::string, int64_t> specials, bool add_bos);
  std::vector<int64_t> encode(const std::string& text) const override;
  std::vector<int64_t> encode_text(const std::string& text) const override;  // the bytes, one id each
  std::string token_bytes(int64_t id, bool with_special) const override;
  int64_t vocab_size() const override { return vocab_size_; }

 private:
  int64_t vocab_size_ = 256;
  std::map<int64_t, std::string> names_;
};

}  // namespace gspo::tokenizer
