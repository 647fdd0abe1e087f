#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::domain {

/// Tasks belong to one of this many partitions, fixed for every installation: a partition is
/// the unit of sending work that moves between the nodes of a cluster.
inline constexpr std::size_t partition_count = 256;

using partition = std::uint16_t;

/// The partition of every task of the message `message_id` ("msg_" and hex digits): the first
/// byte of its keyed hash, so all tasks of a message share one, partitions are even whatever the
/// business keys look like, and SQL finds a task's partition from its message id alone.
/// nullopt when the id has no such prefix.
std::optional<partition> partition_of(std::string_view message_id);

/// The two hex digits message ids of `p` start with after "msg_" ("00" … "ff").
std::string partition_prefix(partition p);

/// The partitions `self` owns among the live `members` (self included or not: it is counted
/// either way), by rendezvous hashing: each partition goes to the member scoring highest for
/// it, so a member joining or leaving moves only the partitions it wins or held. Ascending.
std::vector<partition> owned_partitions(const std::string& self,
                                        const std::vector<std::string>& members);

/// The owner of each partition (an index into `members`), partition by partition; empty when
/// there are no members.
std::vector<std::size_t> partition_owners(const std::vector<std::string>& members);

/// How many partitions each of `members` owns, in the order given.
std::vector<std::size_t> partition_shares(const std::vector<std::string>& members);

} // namespace herald::domain
