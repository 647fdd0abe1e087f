#include "domain/utf8.hpp"

namespace herald::domain {

std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto byte = static_cast<unsigned char>(text[i]);
  std::size_t length = 0;
  unsigned min_code = 0;
  unsigned code = 0;
  if (byte < 0x80)
    return 1;
  if ((byte & 0xE0) == 0xC0) {
    length = 2, min_code = 0x80, code = byte & 0x1F;
  } else if ((byte & 0xF0) == 0xE0) {
    length = 3, min_code = 0x800, code = byte & 0x0F;
  } else if ((byte & 0xF8) == 0xF0) {
    length = 4, min_code = 0x10000, code = byte & 0x07;
  } else {
    return 0;
  }
  if (i + length > text.size())
    return 0;
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[i + k]);
    if ((next & 0xC0) != 0x80)
      return 0;
    code = (code << 6) | (next & 0x3F);
  }
  const bool surrogate = code >= 0xD800 && code <= 0xDFFF;
  return code < min_code || code > 0x10FFFF || surrogate ? 0 : length;
}

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = utf8_sequence_length(text, i);
    if (length == 0)
      return false;
    i += length;
  }
  return true;
}

} // namespace herald::domain
