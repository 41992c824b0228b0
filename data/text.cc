// Character-level text corpora: a strict UTF-8 decoder, the vocabulary and its string form, the
// contiguous split, the fortunes corpus, and random and sequential windows.
#include "data/text.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include "base/error.h"

namespace normlab::data {

namespace {

// "0x" and two upper-case hex digits.
std::string hex_byte(unsigned char b) {
  static const char* digits = "0123456789ABCDEF";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

// "U+" and at least four upper-case hex digits.
std::string code_point(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}

bool is_character(char32_t c) { return c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF); }

// Where an error in the bytes is: "byte offset 12 (line 3)".
std::string at_offset(std::string_view bytes, size_t offset) {
  const int64_t line = 1 + std::count(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  return "byte offset " + std::to_string(offset) + " (line " + std::to_string(line) + ")";
}

// The bytes [offset, offset + n) that exist, in hex: "0xE2 0x82".
std::string hex_bytes(std::string_view bytes, size_t offset, size_t n) {
  std::string s;
  for (size_t i = offset; i < std::min(bytes.size(), offset + n); ++i)
    s += (s.empty() ? "" : " ") + hex_byte(static_cast<unsigned char>(bytes[i]));
  return s;
}

[[noreturn]] void invalid_utf8(std::string_view bytes, const std::string& source, size_t offset, size_t n,
                               const std::string& reason) {
  throw Error(source + ": not UTF-8 text (a binary file?): invalid UTF-8 at " + at_offset(bytes, offset) + ": " +
              reason + " (bytes " + hex_bytes(bytes, offset, n) + "); expected a UTF-8 text file");
}

// SplitMix64's finalizer, as DataLoader mixes (seed, epoch): nearby (seed, step) pairs give
// unrelated streams.
uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// "1234 characters" / "1 character".
std::string characters_count(int64_t n) { return std::to_string(n) + (n == 1 ? " character" : " characters"); }

// Percent with up to 4 significant digits: "10%", "12.5%".
std::string percent(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g%%", 100 * f);
  return buf;
}

void check_window(int64_t n, int64_t batch_size, int64_t block_size, const char* what) {
  check(batch_size >= 1, [&] { return std::string(what) + ": the batch size must be at least 1, got " +
                                      std::to_string(batch_size); });
  check(block_size >= 1, [&] { return std::string(what) + ": --block-size must be at least 1, got " +
                                      std::to_string(block_size); });
  check(n >= block_size + 1, [&] {
    return std::string(what) + ": the split holds " + characters_count(n) + ", fewer than one window of --block-size " +
           std::to_string(block_size) + " + 1 = " + characters_count(block_size + 1);
  });
}

// The window at `start` as row `row` of batch.
void put_window(const std::vector<int64_t>& ids, int64_t start, int64_t row, TextBatch& batch) {
  const int64_t t = batch.block_size;
  std::copy(ids.begin() + start, ids.begin() + start + t, batch.x.begin() + row * t);
  std::copy(ids.begin() + start + 1, ids.begin() + start + t + 1, batch.y.begin() + row * t);
  batch.starts[row] = start;
}

TextBatch empty_batch(int64_t batch_size, int64_t block_size) {
  TextBatch b;
  b.batch_size = batch_size;
  b.block_size = block_size;
  b.x.resize(batch_size * block_size);
  b.y.resize(batch_size * block_size);
  b.starts.resize(batch_size);
  return b;
}

}  // namespace

// ---- UTF-8 ----

namespace {

// What a lead byte starts (Unicode's table 3-7): the sequence's length, the range allowed for its
// second byte (narrower after E0, ED, F0, F4: no overlong forms, surrogates or values above
// U+10FFFF) and the value bits the lead byte holds.
struct Lead {
  size_t len;
  unsigned char lo, hi;
  char32_t bits;
};

// The sequence that the non-ASCII byte at i starts, or an error for a byte that cannot start one.
Lead lead_of(std::string_view bytes, const std::string& source, size_t i) {
  const unsigned char b0 = static_cast<unsigned char>(bytes[i]);
  if (b0 == 0)
    throw Error(source + ": a NUL byte at " + at_offset(bytes, i) +
                ": a binary file, not text; expected a UTF-8 text file");
  if (b0 < 0xC0) invalid_utf8(bytes, source, i, 1, "a continuation byte (0x80..0xBF) where a character should start");
  if (b0 < 0xC2)
    invalid_utf8(bytes, source, i, 2, "lead byte " + hex_byte(b0) + " only starts overlong forms (of U+0000..U+007F)");
  using u8 = unsigned char;
  if (b0 < 0xE0) return {2, 0x80, 0xBF, static_cast<char32_t>(b0 & 0x1F)};
  if (b0 < 0xF0)
    return {3, u8(b0 == 0xE0 ? 0xA0 : 0x80), u8(b0 == 0xED ? 0x9F : 0xBF), static_cast<char32_t>(b0 & 0x0F)};
  if (b0 < 0xF5)
    return {4, u8(b0 == 0xF0 ? 0x90 : 0x80), u8(b0 == 0xF4 ? 0x8F : 0xBF), static_cast<char32_t>(b0 & 0x07)};
  invalid_utf8(bytes, source, i, 1,
               "byte " + hex_byte(b0) + " never occurs in UTF-8 (it would start a value above U+10FFFF)");
}

// Why a second byte outside the lead's range is refused.
std::string second_byte_reason(unsigned char b0) {
  if (b0 == 0xE0) return "an overlong form (3 bytes for a code point below U+0800)";
  if (b0 == 0xF0) return "an overlong form (4 bytes for a code point below U+10000)";
  if (b0 == 0xED) return "a surrogate (U+D800..U+DFFF), which is not a character";
  return "a code point above U+10FFFF";
}

}  // namespace

std::u32string decode_utf8(std::string_view bytes, const std::string& source) {
  std::u32string out;
  out.reserve(bytes.size());
  const size_t n = bytes.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b0 = static_cast<unsigned char>(bytes[i]);
    if (b0 != 0 && b0 < 0x80) {  // ASCII, the common case
      out.push_back(b0);
      ++i;
      continue;
    }
    const Lead lead = lead_of(bytes, source, i);
    char32_t c = lead.bits;
    for (size_t k = 1; k < lead.len; ++k) {
      // (Messages are built only on failure: this loop runs for every non-ASCII character.)
      auto starts = [&] {
        return "a sequence cut short: lead byte " + hex_byte(b0) + " starts " + std::to_string(lead.len) + " bytes, ";
      };
      if (i + k >= n) invalid_utf8(bytes, source, i, lead.len, starts() + "the data ends after " + std::to_string(k));
      const unsigned char b = static_cast<unsigned char>(bytes[i + k]);
      if (b < 0x80 || b > 0xBF)
        invalid_utf8(bytes, source, i, k + 1,
                     starts() + "byte " + std::to_string(k + 1) + " (" + hex_byte(b) +
                         ") is not a continuation byte (0x80..0xBF)");
      if (k == 1 && (b < lead.lo || b > lead.hi)) invalid_utf8(bytes, source, i, lead.len, second_byte_reason(b0));
      c = (c << 6) | (b & 0x3F);
    }
    out.push_back(c);
    i += lead.len;
  }
  return out;
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (!is_character(c))
      throw Error("encode_utf8: character " + std::to_string(i) + " is " + code_point(c) +
                  ", not a character (a surrogate or above U+10FFFF)");
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::string describe_character(char32_t c) {
  const std::string code = code_point(c);
  switch (c) {
    case U'\n': return code + " '\\n'";
    case U'\t': return code + " '\\t'";
    case U'\r': return code + " '\\r'";
    default: break;
  }
  // C0 and C1 controls, DEL, and non-characters print as the code alone.
  if (c < 0x20 || (c >= 0x7F && c < 0xA0) || !is_character(c)) return code;
  return code + " '" + encode_utf8(std::u32string(1, c)) + "'";
}

// ---- Vocabulary ----

Vocabulary Vocabulary::of_text(std::u32string_view text) {
  std::u32string chars(text);
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  Vocabulary v;
  v.chars_ = std::move(chars);
  return v;
}

Vocabulary Vocabulary::from_characters(std::u32string characters) {
  for (size_t i = 0; i < characters.size(); ++i) {
    check(is_character(characters[i]), [&] {
      return "vocabulary: character " + std::to_string(i) + " is " + code_point(characters[i]) +
             ", not a character (a surrogate or above U+10FFFF)";
    });
    check(i == 0 || characters[i - 1] < characters[i], [&] {
      return "vocabulary: characters must be distinct and sorted by code point, but character " + std::to_string(i) +
             " (" + describe_character(characters[i]) + ") follows " + describe_character(characters[i - 1]);
    });
  }
  Vocabulary v;
  v.chars_ = std::move(characters);
  return v;
}

char32_t Vocabulary::character(int64_t id) const {
  check(id >= 0 && id < size(), [&] {
    return "vocabulary: id " + std::to_string(id) + " is outside [0, " + std::to_string(size()) + ")";
  });
  return chars_[static_cast<size_t>(id)];
}

int64_t Vocabulary::find(char32_t c) const {
  const auto it = std::lower_bound(chars_.begin(), chars_.end(), c);
  return it != chars_.end() && *it == c ? it - chars_.begin() : -1;
}

std::vector<int64_t> Vocabulary::encode(std::u32string_view text, const std::string& what) const {
  std::vector<int64_t> ids(text.size());
  // The missing characters, each with its count and first offset (filled only on failure).
  std::map<char32_t, std::pair<int64_t, size_t>> missing;
  for (size_t i = 0; i < text.size(); ++i) {
    ids[i] = find(text[i]);
    if (ids[i] < 0) {
      auto& m = missing[text[i]];
      if (m.first++ == 0) m.second = i;
    }
  }
  if (missing.empty()) return ids;
  std::string list;
  int shown = 0;
  for (const auto& entry : missing) {
    if (shown++ == 10) {
      list += ", and " + std::to_string(missing.size() - 10) + " more";
      break;
    }
    list += (list.empty() ? "" : ", ") + describe_character(entry.first) + " (" +
            std::to_string(entry.second.first) + (entry.second.first == 1 ? " time" : " times") +
            ", first at character " + std::to_string(entry.second.second) + ")";
  }
  throw Error(what + ": " + std::to_string(missing.size()) +
              (missing.size() == 1 ? " character is" : " characters are") +
              " not in the vocabulary (the " + characters_count(size()) + " of the training text): " + list);
}

std::vector<int64_t> Vocabulary::encode_utf8(std::string_view text, const std::string& what) const {
  return encode(decode_utf8(text, what), what);
}

std::u32string Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::u32string out(ids.size(), U'\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= size())  // the message is built only on failure
      check(false, "vocabulary decode: id " + std::to_string(id) + " at position " + std::to_string(i) +
                       " is outside [0, " + std::to_string(size()) + ")");
    out[i] = chars_[static_cast<size_t>(id)];
  }
  return out;
}

std::string Vocabulary::to_string() const {
  std::string s;
  for (const char32_t c : chars_) {
    if (c == U'\\') {
      s += "\\\\";
    } else if (c >= 0x20 && c <= 0x7E) {
      s += static_cast<char>(c);
    } else {
      char buf[16];
      if (c <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
      else std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(c));
      s += buf;
    }
  }
  return s;
}

Vocabulary Vocabulary::from_string(std::string_view s) {
  std::u32string chars;
  auto fail = [&](size_t at, const std::string& why) {
    throw Error("vocabulary string, at character " + std::to_string(at) + ": " + why +
                " (expected the form Vocabulary::to_string writes: printable ASCII, \\\\, \\uXXXX, \\UXXXXXXXX)");
  };
  size_t i = 0;
  while (i < s.size()) {
    const size_t at = i;
    const unsigned char b = static_cast<unsigned char>(s[i]);
    char32_t c = 0;
    if (b < 0x20 || b > 0x7E) fail(at, "byte " + hex_byte(b) + " is not printable ASCII (write it as \\uXXXX)");
    if (b != '\\') {
      c = b;
      ++i;
    } else if (i + 1 < s.size() && s[i + 1] == '\\') {
      c = U'\\';
      i += 2;
    } else if (i + 1 < s.size() && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
      const size_t digits = s[i + 1] == 'u' ? 4 : 8;
      auto escape = [&] { return "\\" + std::string(1, s[i + 1]); };
      if (i + 2 + digits > s.size()) fail(at, escape() + " needs " + std::to_string(digits) + " hex digits");
      uint64_t v = 0;
      for (size_t k = 0; k < digits; ++k) {
        const char h = s[i + 2 + k];
        int d = -1;
        if (h >= '0' && h <= '9') d = h - '0';
        else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
        else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
        if (d < 0) fail(at, escape() + " needs " + std::to_string(digits) + " hex digits, got \"" +
                                std::string(s.substr(i + 2, digits)) + "\"");
        v = v * 16 + static_cast<uint64_t>(d);
      }
      if (v > 0x10FFFF || !is_character(static_cast<char32_t>(v)))
        fail(at, std::string(s.substr(i, 2 + digits)) + " is not a character (a surrogate or above U+10FFFF)");
      c = static_cast<char32_t>(v);
      i += 2 + digits;
    } else {
      fail(at, "a backslash must start \\\\, \\uXXXX or \\UXXXXXXXX");
    }
    if (!chars.empty() && chars.back() >= c)
      fail(at, describe_character(c) + " does not come after " + describe_character(chars.back()) +
                   ": the characters must be distinct and sorted by code point");
    chars.push_back(c);
  }
  Vocabulary v;
  v.chars_ = std::move(chars);
  return v;
}

// ---- Corpus and split ----

TextCorpus make_text_corpus(std::u32string_view text, const std::string& name, int64_t block_size,
                            double validation_fraction, UnknownCharacters unknown) {
  check(block_size >= 1, name + ": --block-size must be at least 1, got " + std::to_string(block_size));
  check(validation_fraction >= 0 && validation_fraction < 1,
        name + ": the validation fraction (--val-fraction) must be in [0, 1), got " +
            std::to_string(validation_fraction));
  check(!text.empty(), name + ": the text is empty; expected at least " + characters_count(block_size + 1));
  const int64_t n = static_cast<int64_t>(text.size());
  const int64_t n_val = std::llround(validation_fraction * static_cast<double>(n));
  const int64_t n_train = n - n_val;
  check(n_train >= block_size + 1, [&] {
    return name + ": the training split holds " + characters_count(n_train) + " (the first " +
           percent(1 - validation_fraction) + " of " + characters_count(n) +
           "), fewer than one window of --block-size " + std::to_string(block_size) + " + 1 = " +
           characters_count(block_size + 1) + "; expected a longer text or a smaller --block-size";
  });
  TextCorpus c;
  c.name = name;
  c.characters = n;
  c.block_size = block_size;
  c.validation_fraction = validation_fraction;
  const std::u32string_view train_text = text.substr(0, static_cast<size_t>(n_train));
  const std::u32string_view val_text = text.substr(static_cast<size_t>(n_train));
  c.vocabulary = Vocabulary::of_text(train_text);
  check(c.vocabulary.size() >= 2, [&] {
    return name + ": the training split holds one distinct character, " + describe_character(train_text.front()) + ", " +
           characters_count(n_train) + " of it: there is nothing to predict (the loss would be 0 from the first "
           "step); expected a text of at least two distinct characters";
  });
  c.train = c.vocabulary.encode(train_text, name + " (training split)");
  // The validation split: known characters encoded, the others skipped or refused.
  std::u32string known;
  known.reserve(val_text.size());
  for (const char32_t ch : val_text) {
    if (c.vocabulary.contains(ch)) known.push_back(ch);
    else c.skipped_characters.push_back(ch);
  }
  if (!c.skipped_characters.empty() && unknown == UnknownCharacters::Error)
    c.vocabulary.encode(val_text, name + ": the validation split (the last " + percent(validation_fraction) +
                                      ", from character " + std::to_string(n_train) + ")");  // throws naming them
  c.skipped = static_cast<int64_t>(c.skipped_characters.size());
  std::sort(c.skipped_characters.begin(), c.skipped_characters.end());
  c.skipped_characters.erase(std::unique(c.skipped_characters.begin(), c.skipped_characters.end()),
                             c.skipped_characters.end());
  c.validation = c.vocabulary.encode(known, name + " (validation split)");
  const int64_t n_known = static_cast<int64_t>(c.validation.size());
  check(n_val == 0 || n_known >= block_size + 1, [&] {
    return name + ": the validation split holds " + characters_count(n_known) + " (the last " +
           percent(validation_fraction) + " of " + characters_count(n) +
           (c.skipped ? ", less " + std::to_string(c.skipped) + " skipped" : std::string()) +
           "), fewer than one window of --block-size " + std::to_string(block_size) + " + 1 = " +
           characters_count(block_size + 1) + "; expected a larger --val-fraction (or 0: no validation)";
  });
  return c;
}

std::u32string read_text_file(const std::string& path) {
  // stat(2) before opening: a named pipe would block open() until a writer comes, a device such as
  // /dev/zero would be read until memory runs out.
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  check(!std::filesystem::is_directory(st), path + ": is a folder; expected a UTF-8 text file");
  check(!std::filesystem::exists(st) || std::filesystem::is_regular_file(st),
        path + ": is not a regular file (" +
            (std::filesystem::is_fifo(st) ? "a named pipe" : std::filesystem::is_character_file(st) ? "a device" : "a special file") +
            "); expected a UTF-8 text file");
  // Checked before reading: each character takes 12 bytes in memory (decoded, then its id).
  if (std::filesystem::is_regular_file(st)) {
    const uintmax_t size = std::filesystem::file_size(path, ec);
    check(ec || size <= kMaxTextBytes, [&] {
      return path + ": " + std::to_string(size) + " bytes, more than the " + std::to_string(kMaxTextBytes) +
             " (256 MiB) a text may hold here (each character takes 12 bytes in memory); expected a shorter text, "
             "e.g. its first 100 MB (head -c 100M)";
    });
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw Error(path + ": cannot open: " + std::strerror(errno) + "; expected a UTF-8 text file");
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const size_t got = std::fread(buf, 1, sizeof buf, f.get());
    bytes.append(buf, got);
    if (got < sizeof buf) break;
  }
  if (std::ferror(f.get())) throw Error(path + ": cannot read: " + std::strerror(errno));
  std::string_view view(bytes);
  if (view.substr(0, 3) == "\xEF\xBB\xBF") view.remove_prefix(3);  // a byte-order mark
  check(!view.empty(), path + ": empty file" + (bytes.empty() ? "" : std::string(" (a byte-order mark alone)")) +
                           "; expected UTF-8 text");
  return decode_utf8(view, path);
}

TextCorpus load_text_corpus(const std::string& path, int64_t block_size, double validation_fraction,
                            UnknownCharacters unknown) {
  return make_text_corpus(read_text_file(path), path, block_size, validation_fraction, unknown);
}

// ---- The default corpus: fortunes ----

const std::vector<std::string>& default_corpus_files() {
  static const std::vector<std::string> files{
      "art",       "ascii-art", "computers",   "cookie",        "debian",     "definitions",  "disclaimer",
      "drugs",     "education", "ethnic",      "food",          "fortunes",   "goedel",       "humorists",
      "kids",      "knghtbrd",  "law",         "linux",         "linuxcookie", "literature",  "love",
      "magic",     "medicine",  "men-women",   "miscellaneous", "news",       "paradoxum",    "people",
      "perl",      "pets",      "platitudes",  "politics",      "pratchett",  "riddles",      "science",
      "songs-poems", "sports",  "startrek",    "tao",           "translate-me", "wisdom",     "work",
      "zippy"};
  return files;
}

std::u32string read_default_corpus(const std::string& dir) {
  std::error_code ec;
  check(std::filesystem::is_directory(dir, ec),
        dir + ": no such folder; the default text corpus is Debian's fortunes (apt-get install fortunes)");
  std::u32string text;
  for (const std::string& name : default_corpus_files()) {
    const std::string path = (std::filesystem::path(dir) / name).string();
    check(std::filesystem::is_regular_file(path, ec),
          path + ": missing; expected the fortune files of Debian's fortunes and fortunes-min "
                 "(apt-get install fortunes)");
    std::u32string part = read_text_file(path);
    if (part.back() != U'\n') part += U'\n';
    if (part.size() < 3 || part.compare(part.size() - 3, 3, U"\n%\n") != 0) part += U"%\n";
    text += part;
  }
  return text;
}

TextCorpus load_default_corpus(int64_t block_size, double validation_fraction, UnknownCharacters unknown,
                               const std::string& dir) {
  return make_text_corpus(read_default_corpus(dir), "fortunes", block_size, validation_fraction, unknown);
}

// ---- Windows ----

TextBatch random_batch(const std::vector<int64_t>& ids, int64_t batch_size, int64_t block_size,
                       autograd::Generator& gen) {
  const int64_t n = static_cast<int64_t>(ids.size());
  check_window(n, batch_size, block_size, "random text batch");
  TextBatch batch = empty_batch(batch_size, block_size);
  const uint64_t starts = static_cast<uint64_t>(n - block_size);  // [0, N - T - 1]
  for (int64_t b = 0; b < batch_size; ++b) put_window(ids, static_cast<int64_t>(gen.randint(starts)), b, batch);
  return batch;
}

TextBatch random_batch(const std::vector<int64_t>& ids, int64_t batch_size, int64_t block_size, uint64_t seed,
                       int64_t step) {
  check(step >= 0, "random text batch: the step must be >= 0, got " + std::to_string(step));
  autograd::Generator gen(mix64(mix64(seed) + static_cast<uint64_t>(step)));
  return random_batch(ids, batch_size, block_size, gen);
}

int64_t sequential_windows(int64_t split_size, int64_t block_size) {
  check(block_size >= 1, "sequential text windows: --block-size must be at least 1, got " + std::to_string(block_size));
  return split_size <= 1 ? 0 : (split_size - 1) / block_size;
}

int64_t sequential_batches(int64_t split_size, int64_t batch_size, int64_t block_size) {
  check(batch_size >= 1,
        "sequential text batches: the batch size must be at least 1, got " + std::to_string(batch_size));
  const int64_t w = sequential_windows(split_size, block_size);
  return (w + batch_size - 1) / batch_size;
}

TextBatch sequential_batch(const std::vector<int64_t>& ids, int64_t batch_size, int64_t block_size, int64_t b) {
  const int64_t n = static_cast<int64_t>(ids.size());
  check_window(n, batch_size, block_size, "sequential text batch");
  const int64_t w = sequential_windows(n, block_size), batches = (w + batch_size - 1) / batch_size;
  check(b >= 0 && b < batches, [&] {
    return "sequential text batch " + std::to_string(b) + " is outside [0, " + std::to_string(batches) + ")";
  });
  const int64_t first = b * batch_size, count = std::min(batch_size, w - first);
  TextBatch batch = empty_batch(count, block_size);
  for (int64_t k = 0; k < count; ++k) put_window(ids, (first + k) * block_size, k, batch);
  return batch;
}

}  // namespace normlab::data
