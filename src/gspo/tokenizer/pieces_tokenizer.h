// A vocabulary of text pieces with merge scores, as llama2.c (and SentencePiece BPE) models ship it:
// encode = a dummy-prefix space, one piece per UTF-8 character (bytes <0xNN> as fallback), then repeatedly merge
// the adjacent pair whose concatenation is a piece with the highest score; decode = concatenated pieces with
// <0xNN> turned back into bytes. Spec: {"type": "pieces", "pieces": [...], "scores": [...], "bos", "eos", "add_bos"}.
#pragma once
#include <string>
#include <unordered_map>
#include <vector>

#include "gspo/tokenizer/tokenizer.h"

namespace gspo::tokenizer {

class PiecesTokenizer : public Tokenizer {
 public:
  PiecesTokenizer(std::vector<std::string> pieces, std::vector<float> scores, int64_t bos, int64_t eos, bool add_bos);
  std::vector<int64_t> encode(const std::string& text) const override;
  // encode() that never yields the BOS or EOS piece (no character or merge may produce it).
  std::vector<int64_t> encode_text(const std::string& text) const override;
  std::string token_bytes(int64_t id, bool with_special) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }

 private:
  std::vector<int64_t> encode_pieces(const std::string& text, bool plain) const;
  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  std::unordered_map<std::string, int64_t> index_;
  std::vector<int> byte_id_;  // byte -> id of its <0xNN> piece, -1 when absent
};

}  // namespace gspo::tokenizer
