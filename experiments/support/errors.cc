// The normlab command's errors (errors.h).
#include "experiments/support/errors.h"

namespace normlab::experiments {

std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 2;
    if (len == 1 && ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f)) ok = false;
    if (ok) {
      out.append(s, i, len);
      i += len;
      continue;
    }
    static const char* const kHex = "0123456789abcdef";
    out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    ++i;
  }
  return out;
}

}  // namespace normlab::experiments
