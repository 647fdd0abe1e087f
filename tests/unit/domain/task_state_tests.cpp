#include "domain/task_state.hpp"

#include <array>
#include <set>
#include <string>
#include <utility>

#include <boost/test/unit_test.hpp>

using namespace herald::domain;

namespace {

constexpr std::array<task_state, 13> all_states = {
    task_state::pending,     task_state::sending, task_state::sent,       task_state::delivered,
    task_state::read,        task_state::clicked, task_state::retry_wait, task_state::failed,
    task_state::dead,        task_state::expired, task_state::suppressed, task_state::unconfirmed,
    task_state::undelivered,
};

// design.md §3, written out edge by edge (forward only; no dead-letter replay).
const std::set<std::pair<task_state, task_state>> allowed = {
    {task_state::pending, task_state::sending},
    {task_state::pending, task_state::expired},
    {task_state::pending, task_state::suppressed},
    {task_state::sending, task_state::sent},
    {task_state::sending, task_state::retry_wait},
    {task_state::sending, task_state::failed},
    {task_state::sending, task_state::dead},
    {task_state::sending, task_state::unconfirmed},
    {task_state::retry_wait, task_state::sending},
    {task_state::retry_wait, task_state::expired},
    {task_state::retry_wait, task_state::dead},
    {task_state::sent, task_state::delivered},
    {task_state::sent, task_state::read},
    {task_state::sent, task_state::clicked},
    {task_state::sent, task_state::undelivered},
    {task_state::sent, task_state::unconfirmed},
    {task_state::unconfirmed, task_state::delivered},
    {task_state::unconfirmed, task_state::read},
    {task_state::unconfirmed, task_state::clicked},
    {task_state::delivered, task_state::read},
    {task_state::delivered, task_state::clicked},
    {task_state::read, task_state::clicked},
};

} // namespace

BOOST_AUTO_TEST_SUITE(task_state_tests)

BOOST_AUTO_TEST_CASE(names_round_trip) {
  const std::array<std::string, 13> expected = {
      "PENDING", "SENDING", "SENT",    "DELIVERED",  "READ",        "CLICKED",    "RETRY_WAIT",
      "FAILED",  "DEAD",    "EXPIRED", "SUPPRESSED", "UNCONFIRMED", "UNDELIVERED"};
  for (std::size_t i = 0; i < all_states.size(); ++i) {
    BOOST_TEST(std::string(to_string(all_states[i])) == expected[i]);
    const auto parsed = parse_task_state(expected[i]);
    BOOST_REQUIRE(parsed.has_value());
    BOOST_TEST((*parsed == all_states[i]));
  }
}

BOOST_AUTO_TEST_CASE(parse_rejects_other_text) {
  for (const char* text : {"", "pending", "Pending", "PENDING ", "RETRY-WAIT", "UNKNOWN"})
    BOOST_TEST(!parse_task_state(text).has_value(), "accepted '" << text << "'");
}

BOOST_AUTO_TEST_CASE(every_pair_matches_the_table) {
  std::size_t allowed_count = 0;
  for (task_state from : all_states) {
    for (task_state to : all_states) {
      const bool expected = allowed.count({from, to}) == 1;
      allowed_count += expected ? 1 : 0;
      BOOST_TEST(can_transition(from, to) == expected,
                 to_string(from) << " -> " << to_string(to) << " expected " << expected);
    }
  }
  BOOST_TEST(allowed_count == allowed.size());
}

BOOST_AUTO_TEST_CASE(no_state_moves_to_itself_or_back_to_pending) {
  for (task_state state : all_states) {
    BOOST_TEST(!can_transition(state, state), to_string(state));
    BOOST_TEST(!can_transition(state, task_state::pending), to_string(state));
  }
}

BOOST_AUTO_TEST_CASE(terminal_states) {
  const std::set<task_state> non_terminal = {task_state::pending, task_state::sending,
                                             task_state::retry_wait};
  for (task_state state : all_states)
    BOOST_TEST(is_terminal(state) == (non_terminal.count(state) == 0), to_string(state));
}

BOOST_AUTO_TEST_CASE(terminal_states_never_lead_to_a_provider_call) {
  // Once terminal, no edge leads back into SENDING.
  for (task_state state : all_states)
    if (is_terminal(state))
      BOOST_TEST(!can_transition(state, task_state::sending), to_string(state));
}

BOOST_AUTO_TEST_CASE(dead_letters_and_failed_over_tasks_are_replayable) {
  // SUPPRESSED tasks failed over to another channel: an operator may still want the original.
  const std::set<task_state> replayable = {task_state::dead, task_state::failed,
                                           task_state::suppressed};
  for (task_state state : all_states)
    BOOST_TEST(can_replay(state) == (replayable.count(state) == 1), to_string(state));
}

BOOST_AUTO_TEST_CASE(coverage_is_judged_by_the_other_tasks_of_the_message) {
  using s = task_state;
  BOOST_TEST((coverage_of(std::vector<s>{}) == coverage::none));
  BOOST_TEST((coverage_of(std::vector<s>{s::suppressed, s::failed}) == coverage::none));
  BOOST_TEST((coverage_of(std::vector<s>{s::suppressed, s::retry_wait}) == coverage::pending));
  BOOST_TEST((coverage_of(std::vector<s>{s::pending, s::delivered}) == coverage::covered));
  BOOST_TEST((coverage_of(std::vector<s>{s::sent}) == coverage::covered));
  BOOST_TEST((coverage_of(std::vector<s>{s::undelivered, s::expired}) == coverage::none));
  BOOST_TEST((coverage_of(std::vector<s>{s::failed, s::unconfirmed}) == coverage::unknown));
  BOOST_TEST((coverage_of(std::vector<s>{s::unconfirmed, s::read}) == coverage::covered));
  for (auto value : {coverage::covered, coverage::pending, coverage::unknown, coverage::none})
    BOOST_TEST((parse_coverage(to_string(value)) == value));
  BOOST_TEST(!parse_coverage("all").has_value());
}

BOOST_AUTO_TEST_CASE(all_states_are_listed_once) {
  const auto states = all_task_states();
  BOOST_TEST(states.size() == 13u);
  for (auto state : states)
    BOOST_TEST((parse_task_state(to_string(state)) == state));
}

BOOST_AUTO_TEST_SUITE_END()
