#include "domain/partitions.hpp"

#include "domain/keys.hpp"

#include <algorithm>
#include <cstdio>

namespace herald::domain {

namespace {

constexpr std::string_view message_id_prefix = "msg_";

int hex_digit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  return -1;
}

// Rendezvous score of `member` for `p`: stable across processes, builds and hosts.
std::uint64_t score(const std::string& member, partition p) {
  return stable_hash(member + "\n" + std::to_string(p));
}

// The member (index into `members`) scoring highest for `p`; ties go to the smaller name, so
// every node computes the same owner from the same membership.
std::size_t owner_of(partition p, const std::vector<std::string>& members) {
  std::size_t best = 0;
  std::uint64_t best_score = 0;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto s = score(members[i], p);
    if (i == 0 || s > best_score || (s == best_score && members[i] < members[best])) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

} // namespace

std::optional<partition> partition_of(std::string_view message_id) {
  if (message_id.size() < message_id_prefix.size() + 2 ||
      message_id.substr(0, message_id_prefix.size()) != message_id_prefix)
    return std::nullopt;
  const int high = hex_digit(message_id[message_id_prefix.size()]);
  const int low = hex_digit(message_id[message_id_prefix.size() + 1]);
  if (high < 0 || low < 0)
    return std::nullopt;
  return static_cast<partition>(high * 16 + low);
}

std::string partition_prefix(partition p) {
  char text[3];
  std::snprintf(text, sizeof(text), "%02x", static_cast<unsigned>(p % partition_count));
  return text;
}

std::vector<std::size_t> partition_owners(const std::vector<std::string>& members) {
  std::vector<std::size_t> owners;
  if (members.empty())
    return owners;
  owners.reserve(partition_count);
  for (std::size_t p = 0; p < partition_count; ++p)
    owners.push_back(owner_of(static_cast<partition>(p), members));
  return owners;
}

std::vector<partition> owned_partitions(const std::string& self,
                                        const std::vector<std::string>& members) {
  auto everyone = members;
  if (std::find(everyone.begin(), everyone.end(), self) == everyone.end())
    everyone.push_back(self);
  const auto owners = partition_owners(everyone);
  std::vector<partition> owned;
  for (std::size_t p = 0; p < owners.size(); ++p)
    if (everyone[owners[p]] == self)
      owned.push_back(static_cast<partition>(p));
  return owned;
}

std::vector<std::size_t> partition_shares(const std::vector<std::string>& members) {
  std::vector<std::size_t> shares(members.size(), 0);
  for (auto owner : partition_owners(members))
    shares[owner] += 1;
  return shares;
}

} // namespace herald::domain
