// Character-level text corpora for language models: UTF-8 decoded strictly into code points, a
// vocabulary of the training split's characters, a contiguous train / validation split, and
// windows of block_size + 1 characters (inputs and next-character targets), random or in order.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "autograd/generator.h"

namespace normlab::data {

// ---- UTF-8 ----

/// Decodes UTF-8 into Unicode code points, strictly (Unicode's table 3-7). `source` (a file path)
/// starts every error message, which gives the byte offset (0-based) and line (1-based) of the
/// offending sequence and its bytes in hex. Refused: a NUL byte (a binary file), a continuation
/// byte 80..BF where a character starts, a byte that never occurs in UTF-8 (C0, C1: only overlong
/// forms; F5..FF: beyond U+10FFFF), a sequence cut short (by the end of the data or by a byte that is
/// not a continuation byte), an overlong form (E0 80..9F, F0 80..8F), a surrogate (ED A0..BF:
/// U+D800..U+DFFF) and a code point above U+10FFFF (F4 90..BF).
std::u32string decode_utf8(std::string_view bytes, const std::string& source);

/// Encodes code points as UTF-8. Throws for a surrogate or a value above U+10FFFF (not characters).
std::string encode_utf8(std::u32string_view text);

/// A character as messages print it: "U+00E9 'é'", "U+0041 'A'"; control characters by code alone
/// or with their C escape: "U+000A '\n'", "U+0009 '\t'", "U+0007".
std::string describe_character(char32_t c);

// ---- Vocabulary ----

/// The characters a model knows, sorted by code point; a character's id is its rank, 0..V-1.
class Vocabulary {
 public:
  Vocabulary() = default;  ///< empty (V = 0)

  /// The distinct characters of text, sorted by code point.
  static Vocabulary of_text(std::u32string_view text);
  /// From characters that are valid code points, distinct and sorted (throws naming the first that
  /// is not).
  static Vocabulary from_characters(std::u32string characters);

  /// V, the number of characters.
  int64_t size() const { return static_cast<int64_t>(chars_.size()); }
  /// The characters by id.
  const std::u32string& characters() const { return chars_; }
  /// The character of id (throws for an id outside [0, V)).
  char32_t character(int64_t id) const;
  /// The id of c, or -1 when c is not in the vocabulary.
  int64_t find(char32_t c) const;
  bool contains(char32_t c) const { return find(c) >= 0; }  ///< Whether c is in the vocabulary.

  /// The ids of text. Characters not in the vocabulary are an error that starts with `what` (e.g.
  /// "the prompt") and names each distinct missing character (describe_character, the first 10),
  /// how often it occurs and where first (character offset), and the vocabulary's size.
  std::vector<int64_t> encode(std::u32string_view text, const std::string& what) const;
  /// The same for UTF-8 text (decoded strictly first, `what` naming it in errors).
  std::vector<int64_t> encode_utf8(std::string_view text, const std::string& what) const;
  /// The characters of ids (throws for an id outside [0, V), naming its position).
  std::u32string decode(const std::vector<int64_t>& ids) const;

  /// The vocabulary as an ASCII string, for a checkpoint's metadata: the characters in id order,
  /// each printable ASCII character (U+0020..U+007E) as itself except the backslash; every other
  /// character as an escape with hex digits, upper case. Exact for every code point (control
  /// characters, quotes, backslashes, newlines), ASCII only:
  /// \verbatim
  /// the backslash is written "\\"; every other character as "\u" and 4 hex digits (up to U+FFFF)
  /// or "\U" and 8 hex digits (above): the characters '\n', ' ', '"', '\\', 'e', U+00E9 are written
  ///   \u000A "\\e\u00E9
  /// \endverbatim
  std::string to_string() const;
  /// Back from to_string's form (hex digits in either case). Throws, naming the character offset:
  /// a backslash not followed by "\", "u" + 4 or "U" + 8 hex digits, a byte outside U+0020..U+007E,
  /// a value that is not a character, characters not strictly increasing (a repeat, out of order).
  static Vocabulary from_string(std::string_view s);

  bool operator==(const Vocabulary& o) const { return chars_ == o.chars_; }  ///< True when both have the same characters.
  bool operator!=(const Vocabulary& o) const { return chars_ != o.chars_; }  ///< True when the characters differ.

 private:
  std::u32string chars_;  // (V) sorted, distinct
};

// ---- Corpus and split ----

/// What becomes of a validation character that the training split lacks (it has no id): left out
/// of the validation ids, as if deleted from the text (the default; TextCorpus counts and names
/// them), or an error naming them.
enum class UnknownCharacters { Skip, Error };

/// A text split for a character language model. The split is contiguous (no shuffling: nearby
/// text is alike, so shuffled windows would leak validation text into training): the first
/// N - round(f N) characters train, the last round(f N) validate (halves rounded up), f the
/// validation fraction (default 0.1). The vocabulary holds the training split's characters only.
struct TextCorpus {
  std::string name;                  ///< where the text came from: a file path, or "fortunes"
  Vocabulary vocabulary;             ///< the training split's distinct characters
  std::vector<int64_t> train;        ///< (N_train) ids of the first N - round(f N) characters
  std::vector<int64_t> validation;   ///< (N_val) ids of the last round(f N) characters, skipped ones left out
  int64_t characters = 0;            ///< N, the whole text's length in characters
  int64_t block_size = 0;            ///< T, the window length it was checked against
  double validation_fraction = 0;    ///< f
  int64_t skipped = 0;               ///< validation characters not in the vocabulary, left out
  std::u32string skipped_characters; ///< the distinct ones among them, sorted
};

/// Splits and encodes text (see TextCorpus). Errors start with `name`: block_size < 1, f outside
/// [0, 1), an empty text, a training split shorter than one window (block_size + 1 characters,
/// naming both numbers and --block-size), a validation split that is not empty but shorter than
/// one window (after skipping; naming --val-fraction), and with UnknownCharacters::Error a
/// validation character the training split lacks.
TextCorpus make_text_corpus(std::u32string_view text, const std::string& name, int64_t block_size,
                            double validation_fraction = 0.1,
                            UnknownCharacters unknown = UnknownCharacters::Skip);

/// Reads a UTF-8 text file whole: a leading byte-order mark (EF BB BF) is dropped, everything else
/// kept as it is (line ends included). Errors name the file: it is not a regular file, it is larger
/// than kMaxTextBytes (checked before reading), it cannot be opened or read, it is empty, it holds
/// a NUL byte or invalid UTF-8 (decode_utf8: byte offset and line).
std::u32string read_text_file(const std::string& path);

/// read_text_file, then make_text_corpus named by the path.
TextCorpus load_text_corpus(const std::string& path, int64_t block_size, double validation_fraction = 0.1,
                            UnknownCharacters unknown = UnknownCharacters::Skip);

// ---- The default corpus: fortunes ----

/// Where Debian's packages fortunes and fortunes-min (a dependency) install the fortune files.
/// The largest text file read_text_file reads: 2^28 bytes (256 MiB; enwik8's 100 MB fits).
inline constexpr uintmax_t kMaxTextBytes = uintmax_t{1} << 28;

inline constexpr const char* kFortunesDir = "/usr/share/games/fortunes";

/// The 43 English fortune files of Debian 12's fortunes 1:1.99.1-7.3 and fortunes-min (fortune-mod,
/// BSD licence), by name, sorted: "art", "ascii-art", "computers", ..., "zippy". Fixed rather than
/// listed from the folder, since other packages (fortunes-bofh-excuses, ...) add files there. Not
/// the ".dat" index files nor the ".u8" links.
const std::vector<std::string>& default_corpus_files();

/// The default corpus text: the files of default_corpus_files() in dir, in that order, decoded
/// strictly and concatenated. Entries are separated by lines holding "%"; a file that does not end
/// with such a line gets one ("%\n", after a "\n" if its last line lacks one), so that no two
/// entries of adjacent files run together. 2,576,637 characters (2,576,627 from the files, 10 added
/// for five files), 113 distinct. Throws naming the folder and "apt-get install fortunes" when it
/// or a file is missing.
std::u32string read_default_corpus(const std::string& dir = kFortunesDir);

/// read_default_corpus, then make_text_corpus named "fortunes".
TextCorpus load_default_corpus(int64_t block_size, double validation_fraction = 0.1,
                               UnknownCharacters unknown = UnknownCharacters::Skip,
                               const std::string& dir = kFortunesDir);

// ---- Windows ----

/// B windows of T + 1 consecutive ids of a split: x = the first T, y = the next-character targets.
struct TextBatch {
  int64_t batch_size = 0;       ///< B
  int64_t block_size = 0;       ///< T
  std::vector<int64_t> x;       ///< (B, T) row-major: x[b T + t] = ids[starts[b] + t]
  std::vector<int64_t> y;       ///< (B, T) row-major: y[b T + t] = ids[starts[b] + t + 1]
  std::vector<int64_t> starts;  ///< (B) where each window starts in the split
};

/// B windows at random starts, each uniform over the N - T starts [0, N - T - 1] that hold a whole
/// window (gen.randint(N - T), B draws, in order). Throws for B < 1, T < 1 or N < T + 1.
TextBatch random_batch(const std::vector<int64_t>& ids, int64_t batch_size, int64_t block_size,
                       autograd::Generator& gen);
/// The batch of training step `step` (>= 0): random_batch with Generator(mix(seed, step)), so a
/// step's batch depends on (seed, step) alone, as DataLoader's epochs do (a resumed run draws the
/// same batches).
TextBatch random_batch(const std::vector<int64_t>& ids, int64_t batch_size, int64_t block_size, uint64_t seed,
                       int64_t step);

/// The evaluation pass over a split: the non-overlapping windows k = 0, 1, ..., W - 1 starting at
/// k T, W = (N - 1) / T, so every target ids[1 .. W T] is predicted exactly once (the last
/// (N - 1) % T targets are left out), in batches of up to B windows (the last one may be smaller).
int64_t sequential_windows(int64_t split_size, int64_t block_size);
int64_t sequential_batches(int64_t split_size, int64_t batch_size, int64_t block_size);  ///< Number of batches of sequential_windows(split_size, block_size) windows, batch_size each.
/// Batch b in [0, sequential_batches(...)): windows b B .. min((b + 1) B, W) - 1.
TextBatch sequential_batch(const std::vector<int64_t>& ids, int64_t batch_size, int64_t block_size, int64_t b);

}  // namespace normlab::data
