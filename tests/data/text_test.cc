// Character-level text corpora: strict UTF-8 decoding, the vocabulary and its string form, the
// contiguous split, random and sequential windows, every error, and the fortunes corpus.
#include <boost/test/unit_test.hpp>
#include <sys/stat.h>
#include <algorithm>
#include <filesystem>
#include <set>

#include "data/text.h"
#include "tests/data/support.h"
#include "tests/support/files.h"

using namespace normlab::data;
using normlab::autograd::Generator;
using normlab::test::check_mentions;
using normlab::test::error_of;
using normlab::test::fixture;
using normlab::test::TempDir;
using normlab::test::write_file;

namespace {

// The sample file's facts, computed independently with Python (bytes.decode('utf-8'), set, round):
// 2986 bytes, 2953 characters (2932 of 1 byte, 11 of 2, 8 of 3, 2 of 4), 85 distinct; with
// f = 0.1 the training split holds the first 2658 characters (76 distinct) and the validation
// split the last 295, of which 13 are not in the training split: '0', '5' x2, '6' x2, 'B', 'E' x3,
// 'P', U+00B0, U+00BC, U+00BD.
const std::string kSample = fixture("text_sample.txt");
constexpr int64_t kSampleChars = 2953, kSampleDistinct = 85, kSampleTrain = 2658, kSampleVal = 295;
constexpr int64_t kSampleTrainDistinct = 76, kSampleSkipped = 13;

std::u32string sample_text() { return decode_utf8(normlab::test::read_file(kSample), kSample); }

// The message of decoding bytes (an error is expected).
std::string decode_error(const std::string& bytes) {
  return error_of([&] { decode_utf8(bytes, "in.txt"); });
}

// ids 0..n-1, so a window's ids are its positions.
std::vector<int64_t> iota_ids(int64_t n) {
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = i;
  return ids;
}

// Checks that a batch's rows are windows of ids at its starts: x = ids[s, s + T), y = ids[s + 1, s + T + 1).
void check_windows(const TextBatch& b, const std::vector<int64_t>& ids) {
  const int64_t t = b.block_size;
  BOOST_REQUIRE(static_cast<int64_t>(b.x.size()) == b.batch_size * t);
  BOOST_REQUIRE(static_cast<int64_t>(b.y.size()) == b.batch_size * t);
  BOOST_REQUIRE(static_cast<int64_t>(b.starts.size()) == b.batch_size);
  for (int64_t r = 0; r < b.batch_size; ++r) {
    const int64_t s = b.starts[r];
    BOOST_REQUIRE(s >= 0 && s + t + 1 <= static_cast<int64_t>(ids.size()));
    for (int64_t k = 0; k < t; ++k) {
      BOOST_REQUIRE(b.x[r * t + k] == ids[s + k]);
      BOOST_REQUIRE(b.y[r * t + k] == ids[s + k + 1]);
      if (k + 1 < t) BOOST_REQUIRE(b.y[r * t + k] == b.x[r * t + k + 1]);  // targets: inputs shifted by one
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(text_utf8)

// The byte forms are Unicode's (table 3-7), at the edges of each length.
BOOST_AUTO_TEST_CASE(decodes_one_to_four_byte_sequences) {
  const std::string bytes =
      "A\x7F"                            // U+0041, U+007F
      "\xC2\x80\xC3\xA9\xDF\xBF"         // U+0080, U+00E9, U+07FF
      "\xE0\xA0\x80\xE2\x82\xAC\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF"  // U+0800, U+20AC, U+D7FF, U+E000, U+FFFF
      "\xF0\x90\x80\x80\xF0\x9F\x90\x99\xF4\x8F\xBF\xBF";               // U+10000, U+1F419, U+10FFFF
  const std::u32string expected{0x41,   0x7F,   0x80,   0xE9,    0x7FF,   0x800,  0x20AC,
                                0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x1F419, 0x10FFFF};
  BOOST_TEST((decode_utf8(bytes, "in.txt") == expected));
  BOOST_TEST(encode_utf8(expected) == bytes);
  BOOST_TEST(decode_utf8("", "in.txt").empty());
  // The sample file: byte lengths as Python counts them.
  const std::u32string text = sample_text();
  BOOST_TEST(static_cast<int64_t>(text.size()) == kSampleChars);
  int64_t by_length[5] = {0, 0, 0, 0, 0};
  for (char32_t c : text) ++by_length[c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4];
  BOOST_TEST(by_length[1] == 2932);
  BOOST_TEST(by_length[2] == 11);
  BOOST_TEST(by_length[3] == 8);
  BOOST_TEST(by_length[4] == 2);
  BOOST_TEST(encode_utf8(text) == normlab::test::read_file(kSample));
}

BOOST_AUTO_TEST_CASE(refuses_every_kind_of_invalid_utf8) {
  struct Case {
    std::string bytes, offset, reason, shown;
  };
  const std::vector<Case> cases{
      {std::string("ab\0c", 4), "byte offset 2 (line 1)", "a NUL byte", ""},
      {"a\x80", "byte offset 1", "a continuation byte", "bytes 0x80)"},
      {"\xBF", "byte offset 0", "a continuation byte", "bytes 0xBF)"},
      {"\xC0\xAF", "byte offset 0", "lead byte 0xC0 only starts overlong forms", "bytes 0xC0 0xAF"},
      {"\xC1\xBF", "byte offset 0", "lead byte 0xC1 only starts overlong forms", "bytes 0xC1 0xBF"},
      {"x\xF5\x80\x80\x80", "byte offset 1", "byte 0xF5 never occurs", "bytes 0xF5)"},
      {"\xFF", "byte offset 0", "byte 0xFF never occurs", "bytes 0xFF)"},
      {"ab\xE2\x82", "byte offset 2", "lead byte 0xE2 starts 3 bytes, the data ends after 2", "bytes 0xE2 0x82)"},
      {"\xF0\x9F\x90", "byte offset 0", "lead byte 0xF0 starts 4 bytes, the data ends after 3", "0xF0 0x9F 0x90)"},
      {"\xC3(", "byte offset 0", "byte 2 (0x28) is not a continuation byte", "bytes 0xC3 0x28)"},
      {"\xF0\x9F\x90" "A", "byte offset 0", "byte 4 (0x41) is not a continuation byte", "0xF0 0x9F 0x90 0x41"},
      {"\xE0\x80\x80", "byte offset 0", "an overlong form (3 bytes", "bytes 0xE0 0x80 0x80"},
      {"\xE0\x9F\xBF", "byte offset 0", "an overlong form (3 bytes", "bytes 0xE0 0x9F 0xBF"},
      {"\xF0\x8F\xBF\xBF", "byte offset 0", "an overlong form (4 bytes", "bytes 0xF0 0x8F 0xBF 0xBF"},
      {"\xED\xA0\x80", "byte offset 0", "a surrogate (U+D800..U+DFFF)", "bytes 0xED 0xA0 0x80"},
      {"\xED\xBF\xBF", "byte offset 0", "a surrogate", "bytes 0xED 0xBF 0xBF"},
      {"\xF4\x90\x80\x80", "byte offset 0", "above U+10FFFF", "bytes 0xF4 0x90 0x80 0x80"},
      {"x\ny\n\xC3\xA9\xFF", "byte offset 6 (line 3)", "byte 0xFF never occurs", "bytes 0xFF)"},
  };
  for (const Case& c : cases) {
    const std::string message = decode_error(c.bytes);
    check_mentions(message, {"in.txt: ", c.offset, c.reason, c.shown, "expected a UTF-8 text file"});
  }
  check_mentions(decode_error(std::string("ab\0c", 4)), {"a binary file"});
  check_mentions(error_of([] { encode_utf8(std::u32string(1, 0xD800)); }), {"U+D800", "not a character"});
  check_mentions(error_of([] { encode_utf8(U"ab" + std::u32string(1, 0x110000)); }),
                 {"character 2", "U+110000", "not a character"});
}

BOOST_AUTO_TEST_CASE(describes_characters) {
  BOOST_TEST(describe_character(0xE9) == "U+00E9 '\xC3\xA9'");
  BOOST_TEST(describe_character(U'A') == "U+0041 'A'");
  BOOST_TEST(describe_character(U'\n') == "U+000A '\\n'");
  BOOST_TEST(describe_character(U'\t') == "U+0009 '\\t'");
  BOOST_TEST(describe_character(7) == "U+0007");
  BOOST_TEST(describe_character(0x85) == "U+0085");
  BOOST_TEST(describe_character(0x1F419) == "U+1F419 '\xF0\x9F\x90\x99'");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(text_vocabulary)

BOOST_AUTO_TEST_CASE(sorted_distinct_characters_encode_and_decode) {
  const std::u32string text = sample_text();
  const Vocabulary v = Vocabulary::of_text(text);
  BOOST_TEST(v.size() == kSampleDistinct);
  BOOST_TEST(std::is_sorted(v.characters().begin(), v.characters().end()));
  BOOST_TEST((std::set<char32_t>(text.begin(), text.end()).size() == static_cast<size_t>(v.size())));
  BOOST_TEST((v.character(0) == U'\n'));  // the smallest code point of the text
  BOOST_TEST((v.character(v.size() - 1) == 0x1F419));
  BOOST_TEST(v.find(U'\n') == 0);
  BOOST_TEST(v.find(U'~') == -1);
  const std::vector<int64_t> ids = v.encode(text, "sample");
  for (size_t i = 0; i < ids.size(); ++i) BOOST_REQUIRE(v.character(ids[i]) == text[i]);
  BOOST_TEST((v.decode(ids) == text));
  BOOST_TEST(v.encode_utf8(normlab::test::read_file(kSample), "sample") == ids);
  check_mentions(error_of([&] { v.decode({0, 85}); }), {"id 85 at position 1", "outside [0, 85)"});
  check_mentions(error_of([&] { v.character(-1); }), {"id -1", "outside [0, 85)"});
}

// The documented form, written out by hand, and back.
BOOST_AUTO_TEST_CASE(string_form_round_trips_every_code_point) {
  const std::u32string chars{0, 9, 10, 0x20, 0x22, 0x41, 0x5C, 0x7E, 0x7F, 0x80, 0xE9, 0xFFFF, 0x10000, 0x10FFFF};
  const Vocabulary v = Vocabulary::from_characters(chars);
  const std::string s = v.to_string();
  BOOST_TEST(s == "\\u0000\\u0009\\u000A \"A\\\\~\\u007F\\u0080\\u00E9\\uFFFF\\U00010000\\U0010FFFF");
  BOOST_TEST((Vocabulary::from_string(s) == v));
  BOOST_TEST(Vocabulary::from_characters({U'\n', U' ', U'"', U'\\', U'e', 0xE9}).to_string() == R"(\u000A "\\e\u00E9)");
  BOOST_TEST((Vocabulary::from_string("\\u00e9\\uffff") == Vocabulary::from_characters({0xE9, 0xFFFF})));
  BOOST_TEST(Vocabulary().to_string().empty());
  BOOST_TEST(Vocabulary::from_string("").size() == 0);
  // Every character there is, at once.
  std::u32string all;
  for (char32_t c = 0; c <= 0x10FFFF; ++c)
    if (c < 0xD800 || c > 0xDFFF) all.push_back(c);
  const Vocabulary every = Vocabulary::from_characters(all);
  BOOST_TEST(every.size() == 0x110000 - 0x800);
  const std::string every_s = every.to_string();
  BOOST_TEST(std::all_of(every_s.begin(), every_s.end(), [](char b) { return b >= 0x20 && b <= 0x7E; }));
  BOOST_TEST((Vocabulary::from_string(every_s) == every));
  // The sample's vocabulary.
  const Vocabulary sample = Vocabulary::of_text(sample_text());
  BOOST_TEST((Vocabulary::from_string(sample.to_string()) == sample));
}

BOOST_AUTO_TEST_CASE(string_form_errors) {
  const std::string form = "the form Vocabulary::to_string writes";
  check_mentions(error_of([] { Vocabulary::from_string("ab\\x41"); }), {"at character 2", "a backslash must start"});
  check_mentions(error_of([] { Vocabulary::from_string("a\\"); }), {"at character 1", "a backslash must start"});
  check_mentions(error_of([] { Vocabulary::from_string("\\u00G1"); }), {"at character 0", "4 hex digits, got \"00G1\""});
  check_mentions(error_of([] { Vocabulary::from_string("a\\u12"); }), {"at character 1", "\\u needs 4 hex digits"});
  check_mentions(error_of([] { Vocabulary::from_string("\\U0001F41"); }), {"\\U needs 8 hex digits"});
  check_mentions(error_of([] { Vocabulary::from_string("\\uD800"); }), {"\\uD800 is not a character"});
  check_mentions(error_of([] { Vocabulary::from_string("\\U00110000"); }), {"\\U00110000 is not a character"});
  check_mentions(error_of([] { Vocabulary::from_string("ab\ncd"); }), {"at character 2", "byte 0x0A is not printable ASCII"});
  check_mentions(error_of([] { Vocabulary::from_string("a\xC3\xA9"); }), {"at character 1", "byte 0xC3", form});
  check_mentions(error_of([] { Vocabulary::from_string("abb"); }),
                 {"at character 2", "U+0062 'b' does not come after U+0062 'b'", "distinct and sorted"});
  check_mentions(error_of([] { Vocabulary::from_string("b\\u000A"); }),
                 {"at character 1", "U+000A '\\n' does not come after U+0062 'b'"});
  check_mentions(error_of([] { Vocabulary::from_characters(U"ba"); }),
                 {"character 1 (U+0061 'a') follows U+0062 'b'", "distinct and sorted"});
  check_mentions(error_of([] { Vocabulary::from_characters(std::u32string{0x41, 0xDFFF}); }),
                 {"character 1 is U+DFFF", "not a character"});
}

BOOST_AUTO_TEST_CASE(unknown_characters_are_named) {
  const Vocabulary v = Vocabulary::of_text(U"cabbage");
  BOOST_TEST(v.size() == 5);  // a b c e g
  check_mentions(error_of([&] { v.encode(U"abx\u00E9xy", "the prompt"); }),
                 {"the prompt: 3 characters are not in the vocabulary (the 5 characters of the training text)",
                  "U+0078 'x' (2 times, first at character 2)", "U+00E9 '\xC3\xA9' (1 time, first at character 3)",
                  "U+0079 'y' (1 time, first at character 5)"});
  check_mentions(error_of([&] { v.encode_utf8("ab\n", "the prompt"); }),
                 {"the prompt: 1 character is not in the vocabulary", "U+000A '\\n' (1 time, first at character 2)"});
  check_mentions(error_of([&] { v.encode_utf8("ab\xC3", "the prompt"); }),
                 {"the prompt: not UTF-8 text", "byte offset 2", "the data ends after 1"});
  // Beyond ten distinct characters, a count of the rest.
  check_mentions(error_of([&] { v.encode(U"0123456789ABCD", "the prompt"); }),
                 {"14 characters are not in the vocabulary", "U+0039 '9'", ", and 4 more"});
  BOOST_TEST(error_of([&] { v.encode(U"0123456789ABCD", "the prompt"); }).find("U+0041") == std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(text_corpus)

BOOST_AUTO_TEST_CASE(sample_file_splits_at_the_documented_boundary) {
  const std::u32string text = sample_text();
  const TextCorpus c = load_text_corpus(kSample, 16);
  BOOST_TEST(c.name == kSample);
  BOOST_TEST(c.characters == kSampleChars);
  BOOST_TEST(c.block_size == 16);
  BOOST_TEST(c.validation_fraction == 0.1);
  BOOST_TEST(static_cast<int64_t>(c.train.size()) == kSampleTrain);
  BOOST_TEST(c.vocabulary.size() == kSampleTrainDistinct);
  BOOST_TEST((c.vocabulary == Vocabulary::of_text(text.substr(0, kSampleTrain))));
  BOOST_TEST((c.vocabulary.decode(c.train) == text.substr(0, kSampleTrain)));
  // Validation: the last 295 characters, the 13 the training split lacks left out.
  BOOST_TEST(c.skipped == kSampleSkipped);
  BOOST_TEST((c.skipped_characters == std::u32string{U'0', U'5', U'6', U'B', U'E', U'P', 0xB0, 0xBC, 0xBD}));
  BOOST_TEST(static_cast<int64_t>(c.validation.size()) == kSampleVal - kSampleSkipped);
  std::u32string kept;
  for (char32_t ch : text.substr(kSampleTrain))
    if (c.skipped_characters.find(ch) == std::u32string::npos) kept.push_back(ch);
  BOOST_TEST((c.vocabulary.decode(c.validation) == kept));
  // Refusing them instead names them.
  check_mentions(error_of([] { load_text_corpus(kSample, 16, 0.1, UnknownCharacters::Error); }),
                 {kSample, "the validation split (the last 10%, from character 2658)", "9 characters are not in the vocabulary",
                  "U+0045 'E' (3 times", "U+00BD '\xC2\xBD' (1 time"});
}

// Small texts where the boundary is easy to see; round(f N) rounds halves away from zero.
BOOST_AUTO_TEST_CASE(split_boundaries) {
  const TextCorpus c = make_text_corpus(U"abcabcabca", "t", 2, 0.3);
  BOOST_TEST((c.vocabulary.decode(c.train) == U"abcabca"));
  BOOST_TEST((c.vocabulary.decode(c.validation) == U"bca"));
  BOOST_TEST(c.skipped == 0);
  const TextCorpus half = make_text_corpus(U"abcabcabca", "t", 2, 0.25);  // 2.5 -> 3
  BOOST_TEST(half.train.size() == 7u);
  BOOST_TEST(half.validation.size() == 3u);
  const TextCorpus none = make_text_corpus(U"abcabcabca", "t", 2, 0.0);
  BOOST_TEST(none.train.size() == 10u);
  BOOST_TEST(none.validation.empty());
  const TextCorpus all_skipped = make_text_corpus(U"abababaxyz", "t", 2, 0.0);
  BOOST_TEST(all_skipped.vocabulary.size() == 5);  // no validation: the whole text trains
}

BOOST_AUTO_TEST_CASE(corpus_errors) {
  TempDir dir;
  const std::string empty = dir.file("empty.txt"), bom = dir.file("bom.txt"), binary = dir.file("binary.txt"),
                    bad = dir.file("bad.txt"), small = dir.file("small.txt");
  write_file(empty, "");
  write_file(bom, "\xEF\xBB\xBF");
  write_file(binary, std::string("PK\x03\x04\0\0abc", 9));
  write_file(bad, "caf\xC3\xA9\nna\xEFve\n");
  std::string ab;
  for (int i = 0; i < 50; ++i) ab += "ab";
  write_file(small, ab);
  check_mentions(error_of([&] { load_text_corpus(empty, 8); }), {empty + ": empty file", "expected UTF-8 text"});
  check_mentions(error_of([&] { load_text_corpus(bom, 8); }), {bom + ": empty file (a byte-order mark alone)"});
  check_mentions(error_of([&] { load_text_corpus(binary, 8); }),
                 {binary + ": a NUL byte at byte offset 4 (line 1)", "a binary file"});
  check_mentions(error_of([&] { load_text_corpus(bad, 8); }),
                 {bad + ": not UTF-8 text", "byte offset 8 (line 2)", "byte 2 (0x76) is not a continuation byte"});
  check_mentions(error_of([&] { load_text_corpus(dir.file("missing.txt"), 8); }),
                 {dir.file("missing.txt") + ": cannot open", "No such file", "expected a UTF-8 text file"});
  check_mentions(error_of([&] { load_text_corpus(dir.path().string(), 8); }), {"is a folder"});
  // Special files are refused before they are opened: a named pipe would block open() forever,
  // /dev/zero would be read until memory runs out.
  const std::string fifo = dir.file("pipe.txt");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  check_mentions(error_of([&] { load_text_corpus(fifo, 8); }), {fifo + ": is not a regular file (a named pipe)"});
  check_mentions(error_of([&] { load_text_corpus("/dev/zero", 8); }), {"/dev/zero: is not a regular file (a device)"});
  // A text larger than 256 MiB is refused before it is read (a sparse file: no disk used).
  const std::string huge = dir.file("huge.txt");
  write_file(huge, "ab");
  std::filesystem::resize_file(huge, (uintmax_t{1} << 28) + 1);
  check_mentions(error_of([&] { load_text_corpus(huge, 8); }),
                 {huge + ": 268435457 bytes, more than the 268435456 (256 MiB) a text may hold here"});
  // 100 characters: 90 train, 10 validate.
  check_mentions(error_of([&] { load_text_corpus(small, 90); }),
                 {small + ": the training split holds 90 characters (the first 90% of 100 characters)",
                  "fewer than one window of --block-size 90 + 1 = 91 characters"});
  BOOST_TEST(load_text_corpus(small, 9).train.size() == 90u);  // 9 + 1 = 10 validation characters: one window
  check_mentions(error_of([&] { load_text_corpus(small, 10); }),
                 {small + ": the validation split holds 10 characters (the last 10% of 100 characters)",
                  "--block-size 10 + 1 = 11 characters", "--val-fraction"});
  // One distinct character: nothing to predict (a one-class CSV is refused the same way).
  check_mentions(error_of([&] { make_text_corpus(U"aaaaaaaaaaaaaaaaaaaa", "one", 2, 0.1); }),
                 {"one: the training split holds one distinct character, U+0061 'a', 18 characters of it",
                  "at least two distinct characters"});
  check_mentions(error_of([&] { make_text_corpus(U"abababacab", "t", 2, 0.3); }),
                 {"t: the validation split holds 2 characters", "less 1 skipped", "--block-size 2 + 1 = 3"});
  check_mentions(error_of([&] { load_text_corpus(small, 0); }), {small + ": --block-size must be at least 1, got 0"});
  check_mentions(error_of([&] { load_text_corpus(small, 8, 1.0); }), {"--val-fraction", "[0, 1), got 1"});
  check_mentions(error_of([&] { load_text_corpus(small, 8, -0.1); }), {"[0, 1), got -0.1"});
  check_mentions(error_of([&] { make_text_corpus(U"", "t", 8); }), {"t: the text is empty", "9 characters"});
}

BOOST_AUTO_TEST_CASE(byte_order_mark_is_dropped) {
  TempDir dir;
  write_file(dir.file("a.txt"), "\xEF\xBB\xBFh\xC3\xA9llo");
  BOOST_TEST((read_text_file(dir.file("a.txt")) == U"h\u00E9llo"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(text_windows)

BOOST_AUTO_TEST_CASE(random_windows_repeat_with_the_seed) {
  const TextCorpus c = load_text_corpus(kSample, 32);
  const TextBatch a = random_batch(c.train, 8, 32, /*seed=*/7, /*step=*/3);
  BOOST_TEST(a.batch_size == 8);
  BOOST_TEST(a.block_size == 32);
  check_windows(a, c.train);
  const TextBatch again = random_batch(c.train, 8, 32, 7, 3);
  BOOST_TEST(again.starts == a.starts);
  BOOST_TEST(again.x == a.x);
  BOOST_TEST(again.y == a.y);
  BOOST_TEST(random_batch(c.train, 8, 32, 7, 4).starts != a.starts);
  BOOST_TEST(random_batch(c.train, 8, 32, 8, 3).starts != a.starts);
  // With a caller's generator: B draws of randint(N - T), in order.
  Generator g1(11), g2(11), g3(11);
  const TextBatch b1 = random_batch(c.validation, 4, 32, g1), b2 = random_batch(c.validation, 4, 32, g2);
  check_windows(b1, c.validation);
  BOOST_TEST(b1.starts == b2.starts);
  for (int64_t r = 0; r < 4; ++r)
    BOOST_TEST(b1.starts[r] == static_cast<int64_t>(g3.randint(c.validation.size() - 32)));
  BOOST_TEST(random_batch(c.validation, 4, 32, g1).starts != b1.starts);  // the generator moved on
}

BOOST_AUTO_TEST_CASE(random_starts_cover_every_whole_window) {
  const std::vector<int64_t> ids = iota_ids(7);  // T = 4: starts 0, 1, 2
  std::set<int64_t> seen;
  for (int64_t step = 0; step < 50; ++step) {
    const TextBatch b = random_batch(ids, 3, 4, 0, step);
    check_windows(b, ids);
    seen.insert(b.starts.begin(), b.starts.end());
  }
  BOOST_TEST((seen == std::set<int64_t>{0, 1, 2}));
  const TextBatch one = random_batch(iota_ids(5), 2, 4, 0, 0);  // N = T + 1: the one window
  BOOST_TEST(one.starts == (std::vector<int64_t>{0, 0}));
  BOOST_TEST(one.y == (std::vector<int64_t>{1, 2, 3, 4, 1, 2, 3, 4}));
}

// N = 23, T = 5: W = 22 / 5 = 4 windows at 0, 5, 10, 15 predicting targets 1..20; B = 3: 3 + 1.
BOOST_AUTO_TEST_CASE(sequential_pass_predicts_each_target_once) {
  const std::vector<int64_t> ids = iota_ids(23);
  BOOST_TEST(sequential_windows(23, 5) == 4);
  BOOST_TEST(sequential_batches(23, 3, 5) == 2);
  const TextBatch b0 = sequential_batch(ids, 3, 5, 0), b1 = sequential_batch(ids, 3, 5, 1);
  BOOST_TEST(b0.starts == (std::vector<int64_t>{0, 5, 10}));
  BOOST_TEST(b1.batch_size == 1);
  BOOST_TEST(b1.starts == (std::vector<int64_t>{15}));
  BOOST_TEST(b1.x == (std::vector<int64_t>{15, 16, 17, 18, 19}));
  BOOST_TEST(b1.y == (std::vector<int64_t>{16, 17, 18, 19, 20}));
  check_windows(b0, ids);
  check_windows(b1, ids);
  std::vector<int64_t> targets(b0.y);
  targets.insert(targets.end(), b1.y.begin(), b1.y.end());
  std::vector<int64_t> expected(20);
  for (int64_t i = 0; i < 20; ++i) expected[i] = i + 1;
  BOOST_TEST(targets == expected);
  BOOST_TEST(sequential_windows(21, 5) == 4);  // 20 targets: exactly 4 windows
  BOOST_TEST(sequential_windows(20, 5) == 3);
  BOOST_TEST(sequential_windows(1, 5) == 0);
  BOOST_TEST(sequential_batches(0, 3, 5) == 0);
  // The sample's validation split: every target once.
  const TextCorpus c = load_text_corpus(kSample, 16);
  const int64_t n = static_cast<int64_t>(c.validation.size()), batches = sequential_batches(n, 4, 16);
  int64_t windows = 0;
  for (int64_t b = 0; b < batches; ++b) {
    const TextBatch tb = sequential_batch(c.validation, 4, 16, b);
    check_windows(tb, c.validation);
    for (int64_t r = 0; r < tb.batch_size; ++r) BOOST_TEST(tb.starts[r] == 16 * windows++);
  }
  BOOST_TEST(windows == (n - 1) / 16);
}

BOOST_AUTO_TEST_CASE(window_errors) {
  const std::vector<int64_t> ids = iota_ids(10);
  check_mentions(error_of([&] { random_batch(ids, 0, 4, 0, 0); }), {"the batch size must be at least 1, got 0"});
  check_mentions(error_of([&] { random_batch(ids, 2, 0, 0, 0); }), {"--block-size must be at least 1, got 0"});
  check_mentions(error_of([&] { random_batch(ids, 2, 10, 0, 0); }),
                 {"the split holds 10 characters, fewer than one window of --block-size 10 + 1 = 11 characters"});
  check_mentions(error_of([&] { random_batch(ids, 2, 4, 0, -1); }), {"the step must be >= 0, got -1"});
  check_mentions(error_of([&] { sequential_batch(ids, 1, 4, 2); }), {"sequential text batch 2 is outside [0, 2)"});
  check_mentions(error_of([&] { sequential_batch(ids, 1, 4, -1); }), {"outside [0, 2)"});
  check_mentions(error_of([&] { sequential_batch(ids, 2, 10, 0); }), {"fewer than one window of --block-size 10"});
  check_mentions(error_of([&] { sequential_batches(10, 0, 4); }), {"the batch size must be at least 1, got 0"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(text_fortunes)

BOOST_AUTO_TEST_CASE(file_list_and_missing_folder) {
  const std::vector<std::string>& files = default_corpus_files();
  BOOST_TEST(files.size() == 43u);
  BOOST_TEST(std::is_sorted(files.begin(), files.end()));
  BOOST_TEST((std::adjacent_find(files.begin(), files.end()) == files.end()));
  TempDir dir;
  check_mentions(error_of([&] { read_default_corpus(dir.file("none")); }),
                 {dir.file("none") + ": no such folder", "apt-get install fortunes"});
  check_mentions(error_of([&] { read_default_corpus(dir.path().string()); }),
                 {dir.file("art") + ": missing", "apt-get install fortunes"});
}

// The separators the loader adds: a file without a final "%" line gets one, without a final
// newline a newline first.
BOOST_AUTO_TEST_CASE(separator_lines_between_files) {
  TempDir dir;
  for (const std::string& name : default_corpus_files()) write_file(dir.file(name), name + "\n%\n");
  write_file(dir.file("art"), "one\n%\ntwo");
  write_file(dir.file("ascii-art"), "three\n");
  const std::u32string text = read_default_corpus(dir.path().string());
  BOOST_TEST((text.substr(0, 25) == U"one\n%\ntwo\n%\nthree\n%\ncompu"));
}

// The installed corpus (Debian 12's fortunes and fortunes-min 1:1.99.1-7.3). Its facts were
// computed independently with Python from the same files (the same separator rule): 2576637 characters, 113 distinct; f = 0.1: the training split holds
// the first 2318973 (112 distinct) and validation the last 257664, of which one, U+00FC, is not
// in the training split.
BOOST_AUTO_TEST_CASE(fortunes_corpus_loads,
                     *boost::unit_test::precondition([](boost::unit_test::test_unit_id) -> boost::test_tools::assertion_result {
                       boost::test_tools::assertion_result r(std::filesystem::exists(kFortunesDir));
                       r.message() << "SKIPPED: " << kFortunesDir << " is missing (install the Debian package fortunes)";
                       return r;
                     })) {
  const std::u32string text = read_default_corpus();
  BOOST_TEST(text.size() == 2576637u);
  BOOST_TEST(Vocabulary::of_text(text).size() == 113);
  BOOST_TEST(encode_utf8(text.substr(0, 40)) == "7:30, Channel 5: The Bionic Dog (Action/");
  const TextCorpus c = load_default_corpus(256);
  BOOST_TEST(c.name == "fortunes");
  BOOST_TEST(c.characters == 2576637);
  BOOST_TEST(c.train.size() == 2318973u);
  BOOST_TEST(c.vocabulary.size() == 112);
  BOOST_TEST(c.skipped == 1);
  BOOST_TEST((c.skipped_characters == std::u32string(1, 0xFC)));
  BOOST_TEST(c.validation.size() == 257664u - 1);
  BOOST_TEST(encode_utf8(c.vocabulary.decode(std::vector<int64_t>(c.validation.begin(), c.validation.begin() + 30))) ==
             "- Dr. Janet Wallace, \"The Dead");
  BOOST_TEST((Vocabulary::from_string(c.vocabulary.to_string()) == c.vocabulary));
}

BOOST_AUTO_TEST_SUITE_END()
