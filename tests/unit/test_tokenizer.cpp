#include <catch2/catch.hpp>

#include "gspo/core/error.h"
#include "gspo/rollout/stop_matcher.h"
#include "gspo/tokenizer/byte_tokenizer.h"

using namespace gspo;

namespace {
tokenizer::ByteTokenizer make() { return tokenizer::ByteTokenizer({{"<|pad|>", 256}, {"<|bos|>", 257}, {"<|eos|>", 258}}, true); }
}  // namespace

TEST_CASE("byte tokenizer round-trips arbitrary bytes and maps special strings", "[tokenizer]") {
  auto tok = make();
  const std::string text = "h\xC3\xA9llo \xF0\x9F\x99\x82 \t\n\x01\xFF";
  auto ids = tok.encode(text);
  CHECK(ids.size() == text.size());
  CHECK(tok.decode(ids) == text);
  CHECK(tok.encode("a<|eos|>b") == std::vector<int64_t>{'a', 258, 'b'});
  CHECK(tok.encode("<|eo") == std::vector<int64_t>{'<', '|', 'e', 'o'});
  CHECK(tok.encode_prompt("x") == std::vector<int64_t>{257, 'x'});
  CHECK(tok.decode({'a', 258}) == "a");
  CHECK(tok.decode({'a', 258}, true) == "a<|eos|>");
  CHECK(tok.eos_id() == 258);
  CHECK(tok.vocab_size() == 259);
  CHECK_THROWS_AS(tok.token_bytes(300, false), DataError);
}

TEST_CASE("encode_text reads special-token strings as text: byte and pieces tokenizers", "[tokenizer]") {
  auto tok = make();
  const std::string text = "a<|eos|>b<|bos|>";
  const auto plain = tok.encode_text(text);
  CHECK(plain.size() == text.size());
  CHECK(tok.decode(plain) == text);  // every byte kept: decoding shows the literal string
  CHECK(tok.encode(text) == std::vector<int64_t>{'a', 258, 'b', 257});
  CHECK(tok.encode_text("") == std::vector<int64_t>{});

  // A pieces vocabulary where merges could spell the EOS piece "</s>" out of text: encode may, encode_text may not.
  auto pieces = tokenizer::from_spec(
      R"({"type": "pieces", "pieces": ["<unk>", "<s>", "</s>", " ", "<", "/", "s", ">", "</", "</s", "x"],)"
      R"( "scores": [0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 0], "bos": 1, "eos": 2})", "p.json");
  CHECK(pieces->encode("</s>x") == std::vector<int64_t>{3, 2, 10});
  CHECK(pieces->encode_text("</s>x") == std::vector<int64_t>{3, 9, 7, 10});
  CHECK(pieces->decode(pieces->encode_text("</s>x")) == " </s>x");
}

TEST_CASE("tokenizer specs are validated", "[tokenizer]") {
  CHECK_THROWS_WITH(tokenizer::from_spec("{\"type\": \"wordpiece\"}", "m.pt"), Catch::Contains("unknown tokenizer type 'wordpiece'"));
  CHECK_THROWS_WITH(tokenizer::from_spec("{oops", "m.pt"), Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(tokenizer::from_spec("{\"type\":\"byte\",\"special_tokens\":{\"<|x|>\":12}}", "m.pt"),
                    Catch::Contains("collides with the byte ids"));
}

TEST_CASE("stop matcher finds a stop string completed by the newest token only", "[rollout][stop]") {
  auto tok = make();
  rollout::StopMatcher m({"\n\n", "END"}, tok);
  std::string text;
  CHECK_FALSE(m.append_and_match(text, 'a'));
  CHECK_FALSE(m.append_and_match(text, 'E'));
  CHECK_FALSE(m.append_and_match(text, 'N'));
  CHECK(m.append_and_match(text, 'D'));
  std::string t2;
  CHECK_FALSE(m.append_and_match(t2, '\n'));
  CHECK(m.append_and_match(t2, '\n'));
  CHECK(t2 == "\n\n");
}
