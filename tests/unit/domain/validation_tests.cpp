#include "domain/template_definition.hpp"
#include "domain/validation.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::domain;
using namespace std::chrono_literals;

namespace {

const timestamp now = from_unix_micros(1'796'205'600'000'000LL); // 2026-12-02T10:00:00Z

routing_rules make_rules() {
  routing_rules rules;
  rules.channels = {"sms", "wechat", "app", "email"};
  rules.routes["ORDER_SHIPPED"].channels = {"sms", "app", "sms"};
  rules.routes["SILENT"] = route{};
  rules.default_route = {"email"};
  rules.templates = {
      {"order_shipped",
       {"Order ${order_no} shipped", "Your order {{ order_no }} is on its way to ${city}."}},
      {"plain", {"", "Hello"}},
  };
  return rules;
}

message_request make_request() {
  message_request request;
  request.biz_type = "ORDER_SHIPPED";
  request.biz_id = "order-20260907-001";
  request.user_id = "u-123";
  request.channels = {"sms", "wechat", "app"};
  request.to = {{"sms", "+8613800000000"}, {"wechat", "oAbC123"}, {"app", "device-token-1"}};
  request.template_name = "order_shipped";
  request.params = {{"order_no", "20260907-001"}, {"city", "Lyon"}};
  return request;
}

struct fixture {
  routing_rules rules = make_rules();
  message_request request = make_request();
  id_secret secret{"installation-secret"};

  std::variant<message_plan, validation_error> plan() const {
    return plan_message(request, rules, secret, now, "trace-1");
  }

  // The error the request is refused with; fails the test if it was accepted.
  validation_error error() const {
    auto result = plan();
    BOOST_REQUIRE_MESSAGE(std::holds_alternative<validation_error>(result), "request was accepted");
    return std::get<validation_error>(result);
  }

  message_plan accepted() const {
    auto result = plan();
    if (auto* e = std::get_if<validation_error>(&result))
      BOOST_FAIL("refused: " << e->code << " " << e->field << ": " << e->message);
    return std::get<message_plan>(result);
  }

  void expect(int status, const std::string& code, const std::string& field) const {
    const validation_error e = error();
    BOOST_TEST(e.status == status);
    BOOST_TEST(e.code == code);
    BOOST_TEST(e.field == field);
    BOOST_TEST(!e.message.empty());
  }
};

std::vector<std::string> channels_of(const message_plan& plan) {
  std::vector<std::string> out;
  for (const auto& task : plan.tasks)
    out.push_back(task.channel);
  return out;
}

} // namespace

BOOST_FIXTURE_TEST_SUITE(validation_tests, fixture)

BOOST_AUTO_TEST_CASE(happy_path_builds_the_full_plan) {
  request.category = category::marketing;
  request.priority = priority::high;
  request.send_at = now + 1h;
  request.expire_at = now + 24h;
  const message_plan plan = accepted();

  const message_key key{"default", "ORDER_SHIPPED", "order-20260907-001", "u-123"};
  const message_record& m = plan.message;
  BOOST_TEST(m.id == message_id_for(key, secret));
  BOOST_TEST((m.key == key));
  BOOST_TEST(m.template_name == "order_shipped");
  BOOST_TEST((m.params == request.params));
  BOOST_TEST(m.title == "Order 20260907-001 shipped");
  BOOST_TEST(m.body == "Your order 20260907-001 is on its way to Lyon.");
  BOOST_TEST((m.category == category::marketing));
  BOOST_TEST((m.priority == priority::high));
  BOOST_TEST((m.send_at == request.send_at));
  BOOST_TEST((m.expire_at == request.expire_at));
  BOOST_TEST(m.trace_id == "trace-1");
  BOOST_TEST((m.created_at == now));

  BOOST_REQUIRE(plan.tasks.size() == 3u);
  const std::vector<std::string> channels = {"sms", "wechat", "app"};
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const task_record& task = plan.tasks[i];
    const task_key tkey{key, channels[i]};
    BOOST_TEST(task.channel == channels[i]);
    BOOST_TEST(task.id == task_id_for(tkey, secret));
    BOOST_TEST(task.provider_request_id == provider_request_id_for(tkey, secret));
    BOOST_TEST(task.recipient == request.to.at(channels[i]));
  }
}

BOOST_AUTO_TEST_CASE(resubmission_plans_the_same_ids) {
  const message_plan first = accepted();
  const auto again = plan_message(request, rules, secret, now + 1h, "trace-2");
  BOOST_REQUIRE(std::holds_alternative<message_plan>(again));
  const message_plan& second = std::get<message_plan>(again);
  BOOST_TEST(first.message.id == second.message.id);
  BOOST_REQUIRE(first.tasks.size() == second.tasks.size());
  for (std::size_t i = 0; i < first.tasks.size(); ++i) {
    BOOST_TEST(first.tasks[i].id == second.tasks[i].id);
    BOOST_TEST(first.tasks[i].provider_request_id == second.tasks[i].provider_request_id);
  }
}

BOOST_AUTO_TEST_CASE(literal_content_instead_of_template) {
  request.template_name.clear();
  request.params.clear();
  request.body = content{"Hi", "Your parcel left {{not_a_param}}"};
  const message_plan plan = accepted();
  BOOST_TEST(plan.message.title == "Hi");
  BOOST_TEST(plan.message.body == "Your parcel left {{not_a_param}}"); // literal, not rendered
  BOOST_TEST(plan.message.template_name.empty());
}

BOOST_AUTO_TEST_CASE(first_failure_wins) {
  request.biz_type.clear();
  request.user_id.clear();
  request.channels = {"fax"};
  expect(400, "invalid_request", "biz_type");
}

// --- biz_type, ids, tenant ---

BOOST_AUTO_TEST_CASE(biz_type_is_required) {
  request.biz_type.clear();
  expect(400, "invalid_request", "biz_type");
}

BOOST_AUTO_TEST_CASE(biz_type_is_bounded) {
  request.biz_type = std::string(64, 'A');
  request.channels = {"sms"};
  accepted();
  request.biz_type = std::string(65, 'A');
  expect(400, "invalid_request", "biz_type");
}

BOOST_AUTO_TEST_CASE(biz_type_charset) {
  request.biz_type = "a.B:c-d_9";
  accepted();
  for (const char* bad : {"ORDER SHIPPED", "ORDER/SHIPPED", "ORDER\tSHIPPED", "ÖRDER"}) {
    request.biz_type = bad;
    expect(400, "invalid_request", "biz_type");
  }
}

BOOST_AUTO_TEST_CASE(biz_id_is_required) {
  request.biz_id.clear();
  expect(400, "invalid_request", "biz_id");
}

BOOST_AUTO_TEST_CASE(biz_id_is_bounded) {
  request.biz_id = std::string(128, 'x');
  accepted();
  request.biz_id = std::string(129, 'x');
  expect(400, "invalid_request", "biz_id");
}

BOOST_AUTO_TEST_CASE(biz_id_refuses_control_characters) {
  request.biz_id = std::string("order\n1");
  expect(400, "invalid_request", "biz_id");
  request.biz_id = std::string("order\0"
                               "1",
                               7);
  expect(400, "invalid_request", "biz_id");
}

BOOST_AUTO_TEST_CASE(user_id_is_required) {
  request.user_id.clear();
  expect(400, "invalid_request", "user_id");
}

BOOST_AUTO_TEST_CASE(user_id_is_bounded) {
  request.user_id = std::string(129, 'u');
  expect(400, "invalid_request", "user_id");
}

BOOST_AUTO_TEST_CASE(user_id_refuses_delete_character) {
  request.user_id = "u-\x7f";
  expect(400, "invalid_request", "user_id");
  request.user_id = "u-\xc3\xa9"; // UTF-8 is fine
  accepted();
}

BOOST_AUTO_TEST_CASE(tenant_is_required) {
  request.tenant.clear();
  expect(400, "invalid_request", "tenant");
}

// --- channels ---

BOOST_AUTO_TEST_CASE(too_many_channels) {
  rules.limits.max_channels = 2;
  expect(400, "invalid_request", "channels");
}

BOOST_AUTO_TEST_CASE(empty_channel_entry) {
  request.channels = {"sms", ""};
  expect(400, "invalid_request", "channels[1]");
}

BOOST_AUTO_TEST_CASE(unknown_channel_names_its_index) {
  request.channels = {"sms", "wechat", "fax"};
  expect(422, "unknown_channel", "channels[2]");
  BOOST_TEST(error().message.find("fax") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(duplicate_channels_are_dropped_keeping_order) {
  request.channels = {"app", "sms", "app", "wechat", "sms"};
  BOOST_TEST((channels_of(accepted()) == std::vector<std::string>{"app", "sms", "wechat"}));
}

BOOST_AUTO_TEST_CASE(route_decides_when_no_channels_are_given) {
  request.channels.clear();
  BOOST_TEST((channels_of(accepted()) == std::vector<std::string>{"sms", "app"}));
}

BOOST_AUTO_TEST_CASE(default_route_when_biz_type_has_none) {
  request.biz_type = "PASSWORD_RESET";
  request.channels.clear();
  request.to = {{"email", "alice@example.com"}};
  const message_plan plan = accepted();
  BOOST_TEST((channels_of(plan) == std::vector<std::string>{"email"}));
  BOOST_TEST(plan.tasks[0].recipient == "alice@example.com");
}

BOOST_AUTO_TEST_CASE(no_route) {
  request.biz_type = "PASSWORD_RESET";
  request.channels.clear();
  rules.default_route.clear();
  expect(422, "no_route", "channels");
}

BOOST_AUTO_TEST_CASE(empty_route_does_not_fall_back_to_default) {
  request.biz_type = "SILENT";
  request.channels.clear();
  expect(422, "no_route", "channels");
}

BOOST_AUTO_TEST_CASE(route_naming_an_unconfigured_channel_is_refused) {
  request.channels.clear();
  rules.routes["ORDER_SHIPPED"].channels = {"sms", "pigeon"};
  expect(422, "unknown_channel", "channels");
}

// --- recipients ---

// Left out, the address is the user's stored contact, taken when the claim runs.
BOOST_AUTO_TEST_CASE(a_recipient_left_out_waits_for_the_users_contact) {
  request.to.erase("wechat");
  const auto plan = accepted();
  BOOST_TEST(plan.message.recipients.count("wechat") == 0u);
  for (const auto& task : plan.tasks)
    BOOST_TEST(task.recipient.empty() == (task.channel == "wechat"));
}

BOOST_AUTO_TEST_CASE(empty_recipient_is_missing) {
  request.to["app"] = "";
  expect(422, "missing_recipient", "to.app");
}

BOOST_AUTO_TEST_CASE(recipients_for_unused_channels_are_ignored) {
  request.channels = {"sms"};
  request.to["email"] = "";
  BOOST_TEST(accepted().tasks.size() == 1u);
}

BOOST_AUTO_TEST_CASE(a_user_addressed_channel_defaults_to_the_user_id) {
  rules.channels.insert("inapp");
  rules.user_addressed = {"inapp"};
  request.channels = {"inapp", "sms"};
  auto plan = accepted();
  BOOST_TEST(plan.tasks[0].recipient == "u-123");
  BOOST_TEST(plan.message.recipients.at("inapp") == "u-123");
  request.channels = {"sms"}; // kept for failover to the inbox all the same
  BOOST_TEST(accepted().message.recipients.at("inapp") == "u-123");
  request.channels = {"inapp"};
  request.to["inapp"] = "u-123-other-profile"; // named: that address is used
  BOOST_TEST(accepted().tasks[0].recipient == "u-123-other-profile");
}

BOOST_AUTO_TEST_CASE(recipient_is_bounded) {
  request.to["sms"] = std::string(320, '1');
  accepted();
  request.to["sms"] = std::string(321, '1');
  expect(400, "invalid_request", "to.sms");
}

BOOST_AUTO_TEST_CASE(recipient_refuses_control_characters) {
  request.to["wechat"] = "oAbC\r\n123";
  expect(400, "invalid_request", "to.wechat");
}

// --- template or content ---

BOOST_AUTO_TEST_CASE(template_and_content_together) {
  request.body = content{"t", "b"};
  expect(400, "invalid_request", "template");
}

BOOST_AUTO_TEST_CASE(neither_template_nor_content) {
  request.template_name.clear();
  expect(400, "invalid_request", "template");
}

BOOST_AUTO_TEST_CASE(template_name_is_bounded) {
  request.template_name = std::string(65, 't');
  expect(400, "invalid_request", "template");
}

BOOST_AUTO_TEST_CASE(unknown_template) {
  request.template_name = "order_lost";
  expect(422, "unknown_template", "template");
}

BOOST_AUTO_TEST_CASE(too_many_params) {
  rules.limits.max_params = 1;
  expect(400, "invalid_request", "params");
}

BOOST_AUTO_TEST_CASE(param_value_is_bounded) {
  request.channels = {"app"}; // a channel without a character limit on its body
  request.params["city"] = std::string(1024, 'c');
  accepted();
  request.params["city"] = std::string(1025, 'c');
  expect(400, "invalid_request", "params.city");
}

BOOST_AUTO_TEST_CASE(params_are_bounded_with_literal_content_too) {
  request.template_name.clear();
  request.body = content{"", "hello"};
  request.params = {{"note", std::string(1025, 'n')}};
  expect(400, "invalid_request", "params.note");
}

BOOST_AUTO_TEST_CASE(missing_parameter_names_template_and_parameter) {
  request.params.erase("city");
  expect(422, "missing_parameter", "params.city");
  BOOST_TEST(error().message == "template 'order_shipped' needs parameter 'city'");
}

BOOST_AUTO_TEST_CASE(extra_parameters_are_allowed) {
  request.template_name = "plain";
  const message_plan plan = accepted();
  BOOST_TEST(plan.message.body == "Hello");
  BOOST_TEST(plan.message.title.empty());
}

BOOST_AUTO_TEST_CASE(content_body_is_required) {
  request.template_name.clear();
  request.body = content{"title", ""};
  expect(400, "invalid_request", "content.body");
}

BOOST_AUTO_TEST_CASE(content_title_is_bounded) {
  request.template_name.clear();
  request.body = content{std::string(256, 't'), "b"};
  accepted();
  request.body = content{std::string(257, 't'), "b"};
  expect(400, "invalid_request", "content.title");
}

BOOST_AUTO_TEST_CASE(content_body_is_bounded) {
  request.template_name.clear();
  request.body = content{"", std::string(4096, 'b')};
  accepted();
  request.body = content{"", std::string(4097, 'b')};
  expect(400, "invalid_request", "content.body");
}

BOOST_AUTO_TEST_CASE(content_title_refuses_control_characters) {
  request.template_name.clear();
  for (const std::string& title :
       {std::string("t\0T", 3), std::string("t\nT"), std::string("t\tT"), std::string("t\x7f")}) {
    BOOST_TEST_CONTEXT("title of " << title.size() << " bytes") {
      request.body = content{title, "b"};
      expect(400, "invalid_request", "content.title");
    }
  }
}

BOOST_AUTO_TEST_CASE(content_body_allows_only_newline_and_tab) {
  request.template_name.clear();
  request.body = content{"t", "line 1\n\tline 2"};
  BOOST_TEST(accepted().message.body == "line 1\n\tline 2");
  for (const std::string& body : {std::string("b\0B", 3), std::string("b\rB"),
                                  std::string("b\x1b[2J"), std::string("b\x7f")}) {
    BOOST_TEST_CONTEXT("body of " << body.size() << " bytes") {
      request.body = content{"t", body};
      expect(400, "invalid_request", "content.body");
    }
  }
}

BOOST_AUTO_TEST_CASE(param_values_refuse_control_characters) {
  request.params["city"] = std::string("Ly\0on", 5);
  expect(400, "invalid_request", "params.city");
  request.params["city"] = "Ly\non";
  expect(400, "invalid_request", "params.city");
}

BOOST_AUTO_TEST_CASE(param_keys_are_bounded_and_printable) {
  request.params[std::string(64, 'k')] = "v";
  accepted();
  request.params[std::string(65, 'k')] = "v";
  expect(400, "invalid_request", "params");
  request.params.erase(std::string(65, 'k'));
  request.params[std::string("k\0", 2)] = "v";
  expect(400, "invalid_request", "params");
  request.params.erase(std::string("k\0", 2));
  request.params[""] = "v";
  expect(400, "invalid_request", "params");
}

BOOST_AUTO_TEST_CASE(recipient_keys_refuse_control_characters) {
  request.to[std::string("fax\0", 4)] = "1";
  expect(400, "invalid_request", "to");
}

BOOST_AUTO_TEST_CASE(template_name_refuses_control_characters) {
  request.template_name = std::string("order_shipped\0x", 15);
  expect(400, "invalid_request", "template");
}

// --- routes: what a request leaves open ---

BOOST_AUTO_TEST_CASE(a_route_sets_category_priority_and_template_a_request_leaves_open) {
  auto& route = rules.routes["ORDER_SHIPPED"];
  route.category = category::marketing;
  route.priority = priority::low;
  route.template_name = "plain";
  request.channels.clear();
  request.template_name.clear();
  const auto routed = accepted();
  BOOST_TEST((channels_of(routed) == std::vector<std::string>{"sms", "app"}));
  BOOST_TEST((routed.message.category == category::marketing));
  BOOST_TEST((routed.message.priority == priority::low));
  BOOST_TEST(routed.message.template_name == "plain");
  BOOST_TEST(routed.message.body == "Hello");

  request.category = category::verification;
  request.priority = priority::high;
  request.template_name = "order_shipped";
  const auto given = accepted();
  BOOST_TEST((given.message.category == category::verification));
  BOOST_TEST((given.message.priority == priority::high));
  BOOST_TEST(given.message.template_name == "order_shipped");

  request.template_name.clear();
  request.body = content{"Title", "Own words"};
  const auto own = accepted(); // content, not the route's template
  BOOST_TEST(own.message.template_name.empty());
  BOOST_TEST(own.message.body == "Own words");
}

BOOST_AUTO_TEST_CASE(without_a_route_or_a_choice_the_defaults_apply) {
  request.biz_type = "UNROUTED";
  const auto plan = accepted();
  BOOST_TEST((plan.message.category == category::transactional));
  BOOST_TEST((plan.message.priority == priority::normal));
  request.template_name.clear(); // and no route to name one
  expect(400, "invalid_request", "template");
}

// --- time window ---

BOOST_AUTO_TEST_CASE(expire_at_in_the_past) {
  request.expire_at = now - 1s;
  expect(400, "invalid_request", "expire_at");
  BOOST_TEST(error().message == "is in the past");
}

BOOST_AUTO_TEST_CASE(expire_at_now_is_already_past) {
  request.expire_at = now;
  expect(400, "invalid_request", "expire_at");
  request.expire_at = now + 1us;
  accepted();
}

BOOST_AUTO_TEST_CASE(expire_at_before_send_at) {
  request.send_at = now + 2h;
  request.expire_at = now + 1h;
  expect(400, "invalid_request", "expire_at");
  request.expire_at = now + 2h;
  expect(400, "invalid_request", "expire_at");
}

BOOST_AUTO_TEST_CASE(send_at_in_the_past_means_now) {
  request.send_at = now - 1h;
  BOOST_TEST((accepted().message.send_at == now - 1h));
}

// Escalation: the route's steps follow its channels as tasks of their own, each due its delay
// after the message's send time; a channel the request sends on directly is not escalated to.
BOOST_AUTO_TEST_CASE(escalation_steps_are_tasks_due_after_their_delay) {
  rules.routes["ORDER_SHIPPED"].channels = {"app"};
  rules.routes["ORDER_SHIPPED"].escalation = {{"sms", 5min}, {"email", 30min}};
  request.channels.clear();
  request.to["email"] = "alice@example.com";
  const message_plan plan = accepted();
  BOOST_TEST((channels_of(plan) == std::vector<std::string>{"app", "sms", "email"}));
  BOOST_TEST(!plan.tasks[0].escalation);
  BOOST_TEST(!plan.tasks[0].not_before.has_value());
  BOOST_TEST(plan.tasks[1].escalation);
  BOOST_TEST((plan.tasks[1].not_before == now + 5min));
  BOOST_TEST(plan.tasks[1].recipient == "+8613800000000");
  BOOST_TEST((plan.tasks[2].not_before == now + 30min));
  BOOST_TEST(plan.tasks[2].recipient == "alice@example.com");
  BOOST_TEST(make_delivery(plan.message, plan.tasks[1]).escalation);
}

BOOST_AUTO_TEST_CASE(escalation_counts_from_a_later_send_at) {
  rules.routes["ORDER_SHIPPED"].channels = {"app"};
  rules.routes["ORDER_SHIPPED"].escalation = {{"sms", 5min}};
  request.channels.clear();
  request.send_at = now + 1h;
  const message_plan plan = accepted();
  BOOST_REQUIRE_EQUAL(plan.tasks.size(), 2U);
  BOOST_TEST((plan.tasks[1].not_before == now + 1h + 5min));
}

BOOST_AUTO_TEST_CASE(a_channel_named_directly_is_not_escalated_to) {
  rules.routes["ORDER_SHIPPED"].escalation = {{"sms", 5min}, {"email", 30min}};
  request.channels = {"app", "sms"};
  const message_plan plan = accepted();
  BOOST_TEST((channels_of(plan) == std::vector<std::string>{"app", "sms", "email"}));
  BOOST_TEST(!plan.tasks[1].escalation); // sms goes now, as asked
  BOOST_TEST(plan.tasks[2].escalation);
  BOOST_TEST(plan.tasks[2].recipient.empty()); // waits for the user's stored address
}

BOOST_AUTO_TEST_CASE(an_escalation_task_has_the_key_a_direct_send_would_have) {
  rules.routes["ORDER_SHIPPED"].channels = {"app"};
  rules.routes["ORDER_SHIPPED"].escalation = {{"sms", 5min}};
  request.channels.clear();
  const auto escalated = accepted().tasks.at(1);
  request.channels = {"sms"};
  const auto direct = accepted().tasks.at(0);
  BOOST_TEST(escalated.id == direct.id);
  BOOST_TEST(escalated.provider_request_id == direct.provider_request_id);
}

BOOST_AUTO_TEST_CASE(a_fallback_of_an_escalation_step_is_one_too) {
  rules.routes["ORDER_SHIPPED"].channels = {"app"};
  rules.routes["ORDER_SHIPPED"].escalation = {{"sms", 5min}};
  request.channels.clear();
  request.to["email"] = "alice@example.com";
  const message_plan plan = accepted();
  const auto fallback =
      fallback_plan(make_delivery(plan.message, plan.tasks.at(1)), "email", secret, now + 5min);
  BOOST_REQUIRE(fallback.has_value());
  BOOST_TEST(fallback->tasks.at(0).escalation); // its mark also looks for a read first
  BOOST_TEST(!fallback_plan(make_delivery(plan.message, plan.tasks.at(0)), "email", secret, now)
                  ->tasks.at(0)
                  .escalation);
}

namespace {

/// The tenant "default" stored "order_shipped" as version 3: an English and a French text and
/// a short SMS body of its own.
template_catalog stored_order_shipped() {
  template_definition d;
  d.default_locale = "en";
  d.locales["en"] = locale_text{"Shipped ${order_no}", "Order ${order_no} is on its way.", {}};
  d.locales["en"].channels["sms"] = channel_text{std::nullopt, std::string("Shipped: ${order_no}")};
  d.locales["fr"] = locale_text{"Expédiée ${order_no}", "Commande ${order_no} expédiée.", {}};
  template_catalog catalog;
  catalog.put(stored_template{"default", "order_shipped", 3, d, now});
  return catalog;
}

} // namespace

BOOST_AUTO_TEST_CASE(a_stored_template_comes_before_the_config_one_and_records_its_version) {
  const auto catalog = stored_order_shipped();
  auto result = plan_message(request, rules, secret, now, "trace-1", &catalog);
  BOOST_TEST_REQUIRE(std::holds_alternative<message_plan>(result));
  const auto& plan = std::get<message_plan>(result);
  BOOST_TEST(plan.message.template_name == "order_shipped");
  BOOST_TEST_REQUIRE(plan.message.template_version.has_value());
  BOOST_TEST(*plan.message.template_version == 3u);
  BOOST_TEST(plan.message.title == "Shipped 20260907-001");
  BOOST_TEST(plan.message.body == "Order 20260907-001 is on its way.");
  // Only the channel whose text differs carries its own.
  for (const auto& task : plan.tasks) {
    if (task.channel == "sms") {
      BOOST_TEST_REQUIRE(task.own_content.has_value());
      BOOST_TEST(task.own_content->body == "Shipped: 20260907-001");
      BOOST_TEST(make_delivery(plan.message, task).body == "Shipped: 20260907-001");
    } else {
      BOOST_TEST(!task.own_content.has_value(), task.channel);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_request_locale_picks_the_text) {
  const auto catalog = stored_order_shipped();
  request.locale = "fr-CA";
  auto result = plan_message(request, rules, secret, now, "trace-1", &catalog);
  BOOST_TEST_REQUIRE(std::holds_alternative<message_plan>(result));
  BOOST_TEST(std::get<message_plan>(result).message.body == "Commande 20260907-001 expédiée.");
}

BOOST_AUTO_TEST_CASE(another_tenant_gets_the_config_template_without_a_version) {
  const auto catalog = stored_order_shipped();
  request.tenant = "other";
  auto result = plan_message(request, rules, secret, now, "trace-1", &catalog);
  BOOST_TEST_REQUIRE(std::holds_alternative<message_plan>(result));
  const auto& plan = std::get<message_plan>(result);
  BOOST_TEST(!plan.message.template_version.has_value());
  BOOST_TEST(plan.message.body == "Your order 20260907-001 is on its way to Lyon.");
}

BOOST_AUTO_TEST_CASE(a_stored_template_missing_a_parameter_is_refused) {
  const auto catalog = stored_order_shipped();
  request.params.erase("order_no");
  auto result = plan_message(request, rules, secret, now, "trace-1", &catalog);
  BOOST_TEST_REQUIRE(std::holds_alternative<validation_error>(result));
  BOOST_TEST(std::get<validation_error>(result).code == "missing_parameter");
  BOOST_TEST(std::get<validation_error>(result).field == "params.order_no");
}

BOOST_AUTO_TEST_CASE(a_rendered_sms_over_its_limit_is_refused_at_acceptance) {
  rules.limits.body_character_limits = {{"sms", 40}};
  request.params["city"] = std::string(30, 'x');
  expect(422, "text_too_long", "params");
  request.channels = {"app"}; // the app channel has no limit
  accepted();
}

BOOST_AUTO_TEST_CASE(line_breaks_in_a_parameter_are_refused_before_any_header_sees_them) {
  request.params["order_no"] = "1\r\nBcc: victim@example.com";
  expect(400, "invalid_request", "params.order_no");
}

BOOST_AUTO_TEST_SUITE_END()
