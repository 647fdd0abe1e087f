#include "actors/atoms.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/deep_to_string.hpp>
#include <caf/make_message.hpp>

using namespace herald;

namespace {

// Serialises values and whole messages the way the middleman does, by the names
// actors::register_types gives them.
struct wire_fixture {
  caf::actor_system_config cfg;
  caf::actor_system sys;

  static caf::actor_system_config& configure(caf::actor_system_config& config) {
    actors::register_types(config);
    return config;
  }

  wire_fixture() : sys(configure(cfg)) {}

  template <class T> T round_trip(T value) {
    std::vector<char> bytes;
    caf::binary_serializer sink{sys, bytes};
    BOOST_REQUIRE(!sink(value));
    T back;
    caf::binary_deserializer source{sys, bytes};
    BOOST_REQUIRE(!source(back));
    return back;
  }

  caf::message round_trip(const caf::message& message) {
    std::vector<char> bytes;
    caf::binary_serializer sink{sys, bytes};
    BOOST_REQUIRE(!message.save(sink));
    caf::message back;
    caf::binary_deserializer source{sys, bytes};
    BOOST_REQUIRE(!back.load(source));
    return back;
  }
};

domain::timestamp at(int seconds) {
  return domain::timestamp{} + std::chrono::seconds{1'700'000'000 + seconds};
}

domain::delivery full_delivery() {
  domain::delivery task;
  task.task_id = "t-1";
  task.message_id = "m-1";
  task.key = {"acme", "order", "1234", "u-123"};
  task.recipients = {{"sms", "+8613800000000"}, {"email", "a@example.com"}};
  task.channel = "sms";
  task.recipient = "+8613800000000";
  task.provider_request_id = "r-1";
  task.title = "Shipped";
  task.body = "Order 1234 shipped";
  task.trace_id = "trace-1";
  task.priority = domain::priority::high;
  task.category = domain::category::verification;
  task.state = domain::task_state::retry_wait;
  task.attempts = 3;
  task.next_attempt_at = at(10);
  task.expire_at = at(3600); // send_at stays empty
  task.accepted_at = at(0);
  task.escalation = true;
  task.status_questions = 2;
  task.next_question_at = at(20);
  return task;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(message_types_tests, wire_fixture)

BOOST_AUTO_TEST_CASE(a_delivery_keeps_every_field_through_serialisation) {
  const auto task = full_delivery();
  const auto back = round_trip(task);
  BOOST_TEST(caf::deep_to_string(back) == caf::deep_to_string(task));
  BOOST_TEST(back.recipients.at("email") == "a@example.com");
  BOOST_TEST(back.key.biz_id == "1234");
  BOOST_TEST((back.state == domain::task_state::retry_wait));
  BOOST_TEST((back.next_attempt_at == at(10)));
  BOOST_TEST(!back.send_at.has_value()); // an empty optional stays empty
  BOOST_TEST((back.expire_at == at(3600)));
  BOOST_TEST(back.status_questions == 2u);
}

BOOST_AUTO_TEST_CASE(a_printed_value_shows_its_fields_under_its_type_name) {
  const auto text = caf::deep_to_string(full_delivery());
  BOOST_TEST(text.find("herald::domain::delivery(") == 0u, text);
  BOOST_TEST(text.find("\"Order 1234 shipped\"") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(nested_optionals_and_sets_survive) {
  domain::user_patch patch;
  patch.contacts = std::map<std::string, std::string>{{"sms", "+8613800000000"}};
  patch.opted_out_categories = std::set<domain::category>{domain::category::marketing};
  patch.dnd = domain::user_patch::dnd_change::lift;
  const auto back = round_trip(patch);
  BOOST_REQUIRE(back.contacts.has_value());
  BOOST_TEST(back.contacts->at("sms") == "+8613800000000");
  BOOST_REQUIRE(back.opted_out_categories.has_value());
  BOOST_TEST(back.opted_out_categories->count(domain::category::marketing) == 1u);
  BOOST_TEST(!back.time_zone.has_value());
  BOOST_TEST((back.dnd == domain::user_patch::dnd_change::lift));
}

// A message is serialised with the registered name of each element: what a request between
// nodes would carry.
BOOST_AUTO_TEST_CASE(a_request_with_a_plan_and_an_answer_travel_as_messages) {
  domain::message_plan plan;
  plan.message.id = "m-1";
  plan.message.key = {"acme", "order", "1234", "u-123"};
  plan.message.template_version = 4;
  plan.message.created_at = at(0);
  domain::task_record task;
  task.id = "t-1";
  task.channel = "sms";
  task.not_before = at(300);
  task.own_content = domain::content{"", "short text"};
  plan.tasks.push_back(task);
  plan.over_cap = domain::when_held::defer;
  auto back = round_trip(caf::make_message(actors::submit_atom_v, plan));
  BOOST_REQUIRE((back.match_elements<actors::submit_atom, domain::message_plan>()));
  const auto& received = back.get_as<domain::message_plan>(1);
  BOOST_TEST(caf::deep_to_string(received) == caf::deep_to_string(plan));
  BOOST_TEST(received.tasks.at(0).own_content->body == "short text");

  actors::maybe_message_view none;
  auto answer = round_trip(caf::make_message(none));
  BOOST_REQUIRE(answer.match_elements<actors::maybe_message_view>());
  BOOST_TEST(!answer.get_as<actors::maybe_message_view>(0).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
