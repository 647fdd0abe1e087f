// Partitions and their owners (domain/partitions.hpp): the partition comes from the message id,
// ownership by rendezvous hashing is total, agreed by every node, even, and moves only what a
// membership change must move.

#include "domain/keys.hpp"
#include "domain/partitions.hpp"

#include <numeric>
#include <set>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

namespace {

std::vector<partition> everything() {
  std::vector<partition> all(partition_count);
  std::iota(all.begin(), all.end(), partition{0});
  return all;
}

std::set<partition> as_set(const std::vector<partition>& partitions) {
  return {partitions.begin(), partitions.end()};
}

} // namespace

BOOST_AUTO_TEST_SUITE(partitions_tests)

BOOST_AUTO_TEST_CASE(the_partition_is_the_first_byte_of_the_message_ids_hash) {
  BOOST_TEST(partition_of("msg_00aa").value() == 0);
  BOOST_TEST(partition_of("msg_0f").value() == 15);
  BOOST_TEST(partition_of("msg_a1ffee").value() == 0xa1);
  BOOST_TEST(partition_of("msg_ff").value() == 255);
  BOOST_TEST(!partition_of("msg_f"));
  BOOST_TEST(!partition_of("tsk_00aa"));
  BOOST_TEST(!partition_of("msg_A1")); // ids are lower-case hex
  BOOST_TEST(!partition_of("msg_g0"));
  BOOST_TEST(!partition_of(""));
  for (partition p : {0, 9, 10, 171, 255})
    BOOST_TEST(partition_of("msg_" + partition_prefix(p) + "0123").value() == p);
}

BOOST_AUTO_TEST_CASE(real_message_ids_spread_over_the_partitions) {
  const id_secret secret{"a secret of this installation"};
  std::vector<std::size_t> counts(partition_count, 0);
  constexpr std::size_t messages = 25600;
  for (std::size_t i = 0; i < messages; ++i) {
    const auto id = message_id_for({"acme", "ORDER", "order-" + std::to_string(i), "u-1"}, secret);
    counts.at(partition_of(id).value()) += 1;
  }
  // 100 expected per partition; a uniform hash stays well inside [50, 160].
  for (auto count : counts) {
    BOOST_TEST(count >= 50u);
    BOOST_TEST(count <= 160u);
  }
}

BOOST_AUTO_TEST_CASE(a_single_node_owns_every_partition) {
  BOOST_TEST(owned_partitions("n1", {}) == everything());
  BOOST_TEST(owned_partitions("n1", {"n1"}) == everything());
  BOOST_TEST(partition_shares({"n1"}) == std::vector<std::size_t>{partition_count});
}

BOOST_AUTO_TEST_CASE(members_split_every_partition_once_and_agree_whatever_the_order) {
  const std::vector<std::string> members{"n1", "n2", "n3"};
  std::set<partition> seen;
  std::size_t total = 0;
  const auto shares = partition_shares(members);
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto owned = owned_partitions(members[i], members);
    BOOST_TEST(owned.size() == shares[i]);
    // The same answer from a node listing the members in another order.
    BOOST_TEST(owned == owned_partitions(members[i], {"n3", "n1", "n2"}));
    total += owned.size();
    seen.insert(owned.begin(), owned.end());
    BOOST_TEST(owned.size() >= 60u); // 85 each on average
    BOOST_TEST(owned.size() <= 110u);
  }
  BOOST_TEST(total == partition_count);
  BOOST_TEST(seen.size() == partition_count);
}

BOOST_AUTO_TEST_CASE(a_member_leaving_moves_only_its_own_partitions) {
  const auto n1_before = as_set(owned_partitions("n1", {"n1", "n2", "n3"}));
  const auto n2_before = as_set(owned_partitions("n2", {"n1", "n2", "n3"}));
  const auto n3_before = as_set(owned_partitions("n3", {"n1", "n2", "n3"}));
  const auto n1_after = as_set(owned_partitions("n1", {"n1", "n2"}));
  const auto n2_after = as_set(owned_partitions("n2", {"n1", "n2"}));
  for (auto p : n1_before)
    BOOST_TEST(n1_after.count(p) == 1u);
  for (auto p : n2_before)
    BOOST_TEST(n2_after.count(p) == 1u);
  // n3's partitions went to the two others, none twice.
  for (auto p : n3_before)
    BOOST_TEST(n1_after.count(p) + n2_after.count(p) == 1u);
  // And n3 coming back takes exactly those back.
  BOOST_TEST((as_set(owned_partitions("n3", {"n1", "n2", "n3"})) == n3_before));
}

BOOST_AUTO_TEST_SUITE_END()
