#include "domain/masking.hpp"

#include <algorithm>

namespace herald::domain {
namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool looks_like_phone(std::string_view text) {
  // ^\+?[0-9 ()-]{6,}$
  if (!text.empty() && text.front() == '+')
    text.remove_prefix(1);
  return text.size() >= 6 && std::all_of(text.begin(), text.end(), [](char c) {
           return is_digit(c) || c == ' ' || c == '(' || c == ')' || c == '-';
         });
}

} // namespace

std::string mask_phone(std::string_view phone) {
  // Keep a leading '+', the next five characters (country code and carrier prefix) and the
  // last four; everything between becomes stars, never fewer than four.
  if (phone.size() < 8)
    return "***";
  constexpr std::size_t kept_suffix = 4;
  constexpr std::size_t min_hidden = 3;
  std::size_t prefix = (phone.front() == '+' ? 1 : 0) + 5;
  prefix = std::min(prefix, phone.size() - kept_suffix - min_hidden);
  const std::size_t hidden = phone.size() - prefix - kept_suffix;
  std::string out(phone.substr(0, prefix));
  out.append(std::max<std::size_t>(hidden, 4), '*');
  out += phone.substr(phone.size() - kept_suffix);
  return out;
}

std::string mask_email(std::string_view email) {
  const std::size_t at = email.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == email.size())
    return "***";
  std::string out(1, email.front());
  out += "***@";
  out += email.substr(at + 1);
  return out;
}

std::string mask_token(std::string_view token) {
  if (token.size() <= 4)
    return "***";
  std::string out(token.substr(0, 3));
  out += "***(";
  out += std::to_string(token.size());
  out += ')';
  return out;
}

std::string mask_recipient(std::string_view recipient) {
  if (recipient.find('@') != std::string_view::npos)
    return mask_email(recipient);
  if (looks_like_phone(recipient))
    return mask_phone(recipient);
  return mask_token(recipient);
}

} // namespace herald::domain
