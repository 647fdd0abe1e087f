#pragma once

#include <cstddef>
#include <string_view>

namespace herald::domain {

/// Length of the well-formed UTF-8 sequence at `text[i]` (1 to 4 bytes), 0 if it is not one: a
/// stray continuation byte, a sequence cut short, an overlong form, a surrogate or a code point
/// past U+10FFFF.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i);

/// Whether all of `text` is well-formed UTF-8.
bool is_valid_utf8(std::string_view text);

} // namespace herald::domain
