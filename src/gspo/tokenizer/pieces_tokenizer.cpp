#include "gspo/tokenizer/pieces_tokenizer.h"

#include <cstdio>

#include "gspo/core/error.h"
#include "gspo/tokenizer/byte_level.h"

namespace gspo::tokenizer {

PiecesTokenizer::PiecesTokenizer(std::vector<std::string> pieces, std::vector<float> scores, int64_t bos, int64_t eos,
                                 bool add_bos)
    : pieces_(std::move(pieces)), scores_(std::move(scores)), byte_id_(256, -1) {
  if (scores_.size() != pieces_.size()) throw DataError("pieces tokenizer: 'pieces' and 'scores' differ in length");
  bos_id_ = bos;
  eos_id_ = eos;
  pad_id_ = eos;
  add_bos_ = add_bos && bos >= 0;
  for (size_t i = 0; i < pieces_.size(); ++i) {
    index_.emplace(pieces_[i], static_cast<int64_t>(i));
    unsigned b = 0;
    if (pieces_[i].size() == 6 && std::sscanf(pieces_[i].c_str(), "<0x%02X>", &b) == 1) byte_id_[b] = static_cast<int>(i);
  }
  if (bos >= 0) specials_[pieces_.at(bos)] = bos;
  if (eos >= 0) specials_[pieces_.at(eos)] = eos;
}

std::vector<int64_t> PiecesTokenizer::encode(const std::string& text) const { return encode_pieces(text, false); }

std::vector<int64_t> PiecesTokenizer::encode_text(const std::string& text) const { return encode_pieces(text, true); }

std::vector<int64_t> PiecesTokenizer::encode_pieces(const std::string& text, bool plain) const {
  // A piece that plain text may not become: the BOS and EOS (the only specials this format has).
  auto barred = [&](int64_t id) { return plain && (id == bos_id_ || id == eos_id_); };
  std::vector<int64_t> ids;
  if (text.empty()) return ids;
  const std::string s = " " + text;  // dummy prefix, as llama2.c and SentencePiece add
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = std::min(utf8_char_len(c), s.size() - i);
    auto it = index_.find(s.substr(i, n));
    if (it != index_.end() && !barred(it->second)) {
      ids.push_back(it->second);
    } else {
      for (size_t k = 0; k < n; ++k) {
        const int b = byte_id_[static_cast<unsigned char>(s[i + k])];
        if (b < 0) throw DataError("pieces tokenizer: no piece or byte fallback for byte " + std::to_string(s[i + k] & 0xFF));
        ids.push_back(b);
      }
    }
    i += n;
  }
  while (ids.size() > 1) {
    float best = -1e30f;
    int64_t best_id = -1;
    size_t at = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      auto it = index_.find(pieces_[ids[i]] + pieces_[ids[i + 1]]);
      if (it != index_.end() && !barred(it->second) && scores_[it->second] > best) {
        best = scores_[it->second];
        best_id = it->second;
        at = i;
      }
    }
    if (best_id < 0) break;
    ids[at] = best_id;
    ids.erase(ids.begin() + static_cast<int64_t>(at) + 1);
  }
  return ids;
}

std::string PiecesTokenizer::token_bytes(int64_t id, bool with_special) const {
  if (id < 0 || id >= vocab_size())
    throw DataError("pieces tokenizer: token id " + std::to_string(id) + " is outside the vocabulary");
  if (id == bos_id_ || id == eos_id_) return with_special ? pieces_[id] : "";
  const std::string& p = pieces_[id];
  unsigned b = 0;
  if (p.size() == 6 && std::sscanf(p.c_str(), "<0x%02X>", &b) == 1) return std::string(1, static_cast<char>(b));
  return p;
}

}  // namespace gspo::tokenizer
