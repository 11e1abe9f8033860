// LiveCodeBench's private test cases as they are stored in code_generation_lite rows: either a JSON string, or
// base64(zlib(pickle(JSON string))). Decoded natively: base64 and zlib here, and the one pickle shape that a
// pickled Python str takes (protocols 1-5); anything else is refused with a message, never executed.
#pragma once
#include <string>

namespace gspo::reward {

// Standard base64 (RFC 4648, '=' padding, whitespace ignored). Throws DataError naming `where` on bad input.
std::string base64_decode(const std::string& text, const std::string& where);

// zlib-wrapped deflate data (RFC 1950) -> bytes. Throws DataError naming `where` when the stream is damaged.
std::string zlib_inflate(const std::string& data, const std::string& where);

// The str inside a pickle that holds exactly one Python str (PROTO, FRAME, SHORT_BINUNICODE / BINUNICODE /
// BINUNICODE8, MEMOIZE / BINPUT / LONG_BINPUT, STOP). Throws DataError naming `where` for any other pickle.
std::string unpickle_string(const std::string& data, const std::string& where);

// A private_test_cases field -> its JSON text (a list of {input, output, testtype}): the field itself when it is
// JSON already, else base64 -> zlib -> pickle. Throws DataError naming `where` when neither reading works.
std::string decode_private_tests(const std::string& field, const std::string& where);

}  // namespace gspo::reward
