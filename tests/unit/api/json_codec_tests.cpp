#include "api/json_codec.hpp"
#include "domain/time.hpp"

#include <string>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
using api::decode_message_request;

namespace {

domain::message_request decoded(const std::string& body) {
  auto result = decode_message_request(body);
  if (auto* error = std::get_if<domain::validation_error>(&result))
    BOOST_FAIL("unexpected error: " << error->message << " (field " << error->field << ")");
  return std::get<domain::message_request>(result);
}

domain::validation_error refused(const std::string& body,
                                 unsigned max_depth = api::default_max_json_depth) {
  auto result = decode_message_request(body, max_depth);
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<domain::validation_error>(result),
                        "expected a refusal of " << body.substr(0, 200));
  return std::get<domain::validation_error>(result);
}

/// A valid request with `extra` spliced in as further members (e.g. `,"params":{...}`).
std::string with(const std::string& extra) {
  return R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-1","user_id":"u-1")" + extra + "}";
}

/// A body nested `depth` levels deep in total: the top-level object plus arrays.
std::string nested(unsigned depth) {
  std::string inner(depth - 1, '[');
  inner.append(depth - 1, ']');
  return R"({"biz_type":"T","biz_id":"b","user_id":"u","x":)" + inner + "}";
}

void check_field_error(const std::string& body, const std::string& field,
                       const std::string& message_part = {}) {
  auto error = refused(body);
  BOOST_TEST_CONTEXT(body) {
    BOOST_TEST(error.status == 400);
    BOOST_TEST(error.code == "invalid_request");
    BOOST_TEST(error.field == field);
    if (!message_part.empty())
      BOOST_TEST(error.message.find(message_part) != std::string::npos, error.message);
  }
}

domain::timestamp at_micros(std::int64_t micros) {
  return domain::from_unix_micros(micros);
}

} // namespace

BOOST_AUTO_TEST_SUITE(json_codec_tests)

BOOST_AUTO_TEST_CASE(decodes_the_design_example) {
  auto request = decoded(R"({
    "biz_type": "ORDER_SHIPPED", "biz_id": "order-20260907-001", "user_id": "u-123",
    "channels": ["sms", "wechat", "app"],
    "to": {"sms": "+8613800000000", "wechat": "oAbC123", "app": "device-token-1"},
    "template": "order_shipped", "params": {"order_no": "20260907-001"},
    "category": "marketing", "priority": "high",
    "send_at": "2026-12-02T10:00:00Z", "expire_at": "2026-12-03T10:00:00Z" })");
  BOOST_TEST(request.tenant == "default");
  BOOST_TEST(request.biz_type == "ORDER_SHIPPED");
  BOOST_TEST(request.biz_id == "order-20260907-001");
  BOOST_TEST(request.user_id == "u-123");
  BOOST_TEST((request.channels == std::vector<std::string>{"sms", "wechat", "app"}));
  BOOST_TEST(request.to.size() == 3u);
  BOOST_TEST(request.to.at("sms") == "+8613800000000");
  BOOST_TEST(request.template_name == "order_shipped");
  BOOST_TEST(request.params.at("order_no") == "20260907-001");
  BOOST_TEST(!request.body.has_value());
  BOOST_TEST((request.category == domain::category::marketing));
  BOOST_TEST((request.priority == domain::priority::high));
  BOOST_REQUIRE(request.send_at.has_value());
  BOOST_TEST((*request.send_at == *domain::parse_rfc3339("2026-12-02T10:00:00Z")));
  BOOST_REQUIRE(request.expire_at.has_value());
  BOOST_TEST((*request.expire_at == *domain::parse_rfc3339("2026-12-03T10:00:00Z")));
}

BOOST_AUTO_TEST_CASE(decodes_content_tenant_and_defaults) {
  auto request =
      decoded(with(R"(,"tenant":"acme","content":{"title":"Shipped","body":"On its way"})"));
  BOOST_TEST(request.tenant == "acme");
  BOOST_REQUIRE(request.body.has_value());
  BOOST_TEST(request.body->title == "Shipped");
  BOOST_TEST(request.body->body == "On its way");
  BOOST_TEST(request.channels.empty());
  // Not given: the route decides, else transactional and normal (domain/validation).
  BOOST_TEST(!request.category.has_value());
  BOOST_TEST(!request.priority.has_value());

  auto untitled = decoded(with(R"(,"content":{"body":"b"})"));
  BOOST_REQUIRE(untitled.body.has_value());
  BOOST_TEST(untitled.body->title.empty());
}

BOOST_AUTO_TEST_CASE(verification_is_a_category) {
  auto request = decoded(with(R"(,"category":"verification")"));
  BOOST_TEST((request.category == domain::category::verification));
}

BOOST_AUTO_TEST_CASE(null_optional_fields_mean_not_given) {
  auto request = decoded(with(R"(,"channels":null,"to":null,"template":null,"params":null,)"
                              R"("content":null,"category":null,"priority":null,)"
                              R"("send_at":null,"expire_at":null,"tenant":null)"));
  BOOST_TEST(request.channels.empty());
  BOOST_TEST(!request.send_at.has_value());
  BOOST_TEST(!request.category.has_value());
  BOOST_TEST(request.tenant == "default");
}

BOOST_AUTO_TEST_CASE(params_scalars_become_text) {
  auto request = decoded(with(R"(,"params":{"order_no":20260907,"ratio":1.5,"neg":-3,)"
                              R"("big":18446744073709551615,"small":0.1,"yes":true,"no":false,)"
                              R"("text":"x y"})"));
  BOOST_TEST(request.params.at("order_no") == "20260907");
  BOOST_TEST(request.params.at("ratio") == "1.5");
  BOOST_TEST(request.params.at("neg") == "-3");
  BOOST_TEST(request.params.at("big") == "18446744073709551615");
  BOOST_TEST(request.params.at("small") == "0.1");
  BOOST_TEST(request.params.at("yes") == "true");
  BOOST_TEST(request.params.at("no") == "false");
  BOOST_TEST(request.params.at("text") == "x y");
}

BOOST_AUTO_TEST_CASE(params_refuse_nested_values) {
  check_field_error(with(R"(,"params":{"a":{"b":"c"}})"), "params.a", "an object");
  check_field_error(with(R"(,"params":{"a":[1]})"), "params.a", "an array");
  check_field_error(with(R"(,"params":{"a":null})"), "params.a");
  check_field_error(with(R"(,"params":["a"])"), "params");
}

BOOST_AUTO_TEST_CASE(malformed_json_is_invalid_request) {
  for (std::string body :
       {std::string(""), std::string("{"), std::string("{\"biz_id\":}"), std::string("not json"),
        with("") + " trailing", with(",") /* trailing comma */,
        std::string("{/* comment */\"biz_id\":\"x\"}"),
        std::string("{\"biz_id\":\"\xff\xfe\"}") /* invalid UTF-8 */}) {
    auto error = refused(body);
    BOOST_TEST_CONTEXT(body) {
      BOOST_TEST(error.status == 400);
      BOOST_TEST(error.code == "invalid_request");
      BOOST_TEST(error.message.rfind("malformed JSON: ", 0) == 0u, error.message);
      BOOST_TEST(error.field.empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(nesting_depth_limit) {
  // 32 levels parse (and then fail only on the unknown field); 33 are refused as too deep.
  auto at_limit = refused(nested(32));
  BOOST_TEST(at_limit.field == "x");
  auto over_limit = refused(nested(33));
  BOOST_TEST(over_limit.status == 400);
  BOOST_TEST(over_limit.code == "invalid_request");
  BOOST_TEST(over_limit.message.find("too deep") != std::string::npos, over_limit.message);

  // The limit is a parameter.
  BOOST_TEST(refused(nested(4), 4).field == "x");
  BOOST_TEST(refused(nested(5), 4).message.find("too deep") != std::string::npos);

  // Very deep input is refused quickly, without recursion trouble.
  BOOST_TEST(refused(std::string(100000, '[')).message.find("too deep") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(top_level_must_be_an_object) {
  for (std::string body : {"[]", "\"text\"", "42", "null", "true"}) {
    auto error = refused(body);
    BOOST_TEST_CONTEXT(body) {
      BOOST_TEST(error.status == 400);
      BOOST_TEST(error.code == "invalid_request");
      BOOST_TEST(error.message.find("must be a JSON object") != std::string::npos);
    }
  }
}

BOOST_AUTO_TEST_CASE(wrong_types_name_the_field) {
  check_field_error(R"({"biz_type":"T","biz_id":42,"user_id":"u"})", "biz_id",
                    "biz_id must be a string");
  check_field_error(R"({"biz_type":"T","biz_id":"b","user_id":null})", "user_id",
                    "user_id must be a string");
  check_field_error(R"({"biz_type":["T"],"biz_id":"b","user_id":"u"})", "biz_type");
  check_field_error(with(R"(,"tenant":1)"), "tenant");
  check_field_error(with(R"(,"channels":"sms")"), "channels", "array");
  check_field_error(with(R"(,"channels":["sms",2])"), "channels", "channels[1]");
  check_field_error(with(R"(,"to":["+86"])"), "to");
  check_field_error(with(R"(,"to":{"sms":13800000000})"), "to.sms");
  check_field_error(with(R"(,"template":7)"), "template");
  check_field_error(with(R"(,"content":"hello")"), "content");
  check_field_error(with(R"(,"content":{"title":"t"})"), "content.body", "required");
  check_field_error(with(R"(,"content":{"body":1})"), "content.body");
  check_field_error(with(R"(,"content":{"title":false,"body":"b"})"), "content.title");
  check_field_error(with(R"(,"content":{"body":"b","footer":"f"})"), "content.footer");
  check_field_error(with(R"(,"category":5)"), "category");
  check_field_error(with(R"(,"priority":true)"), "priority");
  check_field_error(with(R"(,"send_at":1764669600)"), "send_at");
}

BOOST_AUTO_TEST_CASE(unknown_values_name_the_field) {
  check_field_error(with(R"(,"category":"spam")"), "category", "transactional");
  check_field_error(with(R"(,"priority":"urgent")"), "priority", "high");
  check_field_error(with(R"(,"send_at":"tomorrow")"), "send_at", "RFC 3339");
  check_field_error(with(R"(,"expire_at":"2026-13-45T99:00:00Z")"), "expire_at", "RFC 3339");
}

BOOST_AUTO_TEST_CASE(unknown_fields_are_refused) {
  check_field_error(with(R"(,"chanels":["sms"])"), "chanels", "unknown field");
  check_field_error(with(R"(,"":1)"), "", "unknown field");
}

BOOST_AUTO_TEST_CASE(required_ids) {
  check_field_error(R"({"biz_type":"T","user_id":"u"})", "biz_id", "required");
  check_field_error(R"({"biz_id":"b","user_id":"u"})", "biz_type", "required");
  check_field_error(R"({"biz_type":"T","biz_id":"b"})", "user_id", "required");
}

BOOST_AUTO_TEST_CASE(escaped_control_characters_reach_validation_whole) {
  // JSON may carry a NUL as \u0000; the decoder keeps it, so validation sees and refuses it
  // instead of the text being cut short at the NUL further on.
  auto request = decoded(with(R"(,"content":{"title":"t\u0000T","body":"b"})"));
  BOOST_REQUIRE(request.body.has_value());
  BOOST_TEST(request.body->title == std::string("t\0T", 3));
}

BOOST_AUTO_TEST_CASE(non_finite_numbers_are_refused) {
  check_field_error(with(R"(,"params":{"amount":1e999999})"), "params.amount", "out of range");
  check_field_error(with(R"(,"params":{"amount":-1e400})"), "params.amount", "out of range");
  check_field_error(with(R"(,"x":[1,2,1e999])"), "x[2]", "out of range");
  // Tiny numbers round to zero, which is a finite number like any other.
  BOOST_TEST(decoded(with(R"(,"params":{"amount":1e-99999})")).params.at("amount") == "0");
}

BOOST_AUTO_TEST_CASE(duplicate_keys_are_refused_anywhere) {
  struct example {
    std::string body;
    std::string field;
  };
  for (const example& e : std::vector<example>{
           {R"({"biz_type":"T","biz_id":"b","biz_id":"c","user_id":"u"})", "biz_id"},
           {with(R"(,"user_id":"u-2")"), "user_id"},
           {with(R"(,"to":{"sms":"+86138","sms":"+86139"})"), "to.sms"},
           {with(R"(,"params":{"a":"1","b":"2","a":"3"})"), "params.a"},
           {with(R"(,"content":{"body":"b","title":"t","body":"c"})"), "content.body"},
           {with(R"(,"x":[{"k":1},{"k":1,"k":2}])"), "x[1].k"},
       }) {
    auto error = refused(e.body);
    BOOST_TEST_CONTEXT(e.body) {
      BOOST_TEST(error.status == 400);
      BOOST_TEST(error.code == "duplicate_key");
      BOOST_TEST(error.field == e.field);
    }
  }
  // The same key in sibling objects is no duplicate.
  auto request = decoded(with(R"(,"to":{"sms":"+86138"},"params":{"sms":"x"})"));
  BOOST_TEST(request.params.at("sms") == "x");
}

BOOST_AUTO_TEST_CASE(encodes_claim_results) {
  persistence::claim_result result;
  result.message_id = "m-1";
  result.tasks.push_back({"t-1", "sms", domain::task_state::pending, true, std::nullopt, ""});
  result.tasks.push_back({"t-2", "app", domain::task_state::sent, false, std::nullopt, ""});
  BOOST_TEST(api::encode_claim_result(result, "trace-1") ==
             R"({"message_id":"m-1","trace_id":"trace-1","tasks":[)"
             R"({"task_id":"t-1","channel":"sms","status":"PENDING","duplicate":false},)"
             R"({"task_id":"t-2","channel":"app","status":"SENT","duplicate":true}]})");

  persistence::claim_result empty;
  empty.message_id = "m-2";
  BOOST_TEST(api::encode_claim_result(empty, "x") ==
             R"({"message_id":"m-2","trace_id":"x","tasks":[]})");
}

BOOST_AUTO_TEST_CASE(encodes_errors) {
  BOOST_TEST(api::encode_error({400, "invalid_request", "biz_id must be a string", "biz_id"}) ==
             R"({"error":{"code":"invalid_request","message":"biz_id must be a string",)"
             R"("field":"biz_id"}})");
  BOOST_TEST(api::encode_error({413, "payload_too_large", "too \"big\"", ""}) ==
             R"({"error":{"code":"payload_too_large","message":"too \"big\""}})");
}

BOOST_AUTO_TEST_CASE(encodes_message_views) {
  persistence::message_view view;
  auto& message = view.message;
  message.id = "m-1";
  message.key = {"default", "ORDER_SHIPPED", "o-1", "u-1"};
  message.trace_id = "trace-1";
  message.created_at = at_micros(1'000'000);
  message.category = domain::category::transactional;
  message.priority = domain::priority::normal;
  message.title = "Title";
  message.body = "Body";

  persistence::task_view sent;
  sent.task_id = "t-1";
  sent.channel = "sms";
  sent.recipient = "+8613800000000";
  sent.state = domain::task_state::sent;
  sent.attempts = 1;
  sent.provider_request_id = "p-1";
  sent.created_at = at_micros(1'000'000);
  sent.updated_at = at_micros(2'000'000);
  sent.attempt_log.push_back(
      {"t-1", 1, "p-1", "success", "sim-1", at_micros(1'500'000), at_micros(1'600'000)});

  persistence::task_view waiting;
  waiting.task_id = "t-2";
  waiting.channel = "email";
  waiting.recipient = "alice@example.com";
  waiting.state = domain::task_state::retry_wait;
  waiting.attempts = 2;
  waiting.next_attempt_at = at_micros(9'000'000);
  waiting.last_error = "timeout";
  waiting.provider_request_id = "p-2";
  waiting.created_at = at_micros(1'000'000);
  waiting.updated_at = at_micros(3'000'000);
  view.tasks = {sent, waiting};

  auto text = api::encode_message_view(view);
  const std::string expected =
      R"({"message_id":"m-1","biz_type":"ORDER_SHIPPED","biz_id":"o-1","user_id":"u-1",)"
      R"("tenant":"default","trace_id":"trace-1","created_at":"1970-01-01T00:00:01.000000Z",)"
      R"("category":"transactional","priority":"normal","title":"Title","body":"Body",)"
      R"("template":null,"tasks":[{"task_id":"t-1","channel":"sms","recipient":"***0000",)"
      R"("status":"SENT","attempts":1,"provider_request_id":"p-1",)"
      R"("created_at":"1970-01-01T00:00:01.000000Z","updated_at":"1970-01-01T00:00:02.000000Z",)"
      R"("attempt_log":[{"attempt_no":1,"outcome":"success","detail":"sim-1",)"
      R"("started_at":"1970-01-01T00:00:01.500000Z","finished_at":"1970-01-01T00:00:01.600000Z"}],"receipts":[]},)"
      R"({"task_id":"t-2","channel":"email","recipient":"a***@example.com","status":"RETRY_WAIT",)"
      R"("attempts":2,"next_attempt_at":"1970-01-01T00:00:09.000000Z","last_error":"timeout",)"
      R"("provider_request_id":"p-2","created_at":"1970-01-01T00:00:01.000000Z",)"
      R"("updated_at":"1970-01-01T00:00:03.000000Z","attempt_log":[],"receipts":[]}]})";
  BOOST_TEST(text == expected);
  BOOST_TEST(text.find("13800000000") == std::string::npos);
  BOOST_TEST(text.find("alice@") == std::string::npos);

  // The template the text came from: a stored one with its version, a config one without.
  view.message.template_name = "order_shipped";
  view.message.template_version = 3;
  auto stored = boost::json::parse(api::encode_message_view(view)).as_object().at("template");
  BOOST_TEST(boost::json::serialize(stored) ==
             R"({"code":"order_shipped","version":3,"source":"stored"})");
  view.message.template_version.reset();
  auto config = boost::json::parse(api::encode_message_view(view)).as_object().at("template");
  BOOST_TEST(boost::json::serialize(config) ==
             R"({"code":"order_shipped","version":null,"source":"config"})");
}

BOOST_AUTO_TEST_CASE(error_bodies_carry_a_position_when_there_is_one) {
  domain::validation_error error{422, "invalid_template", "locales.en.body: character 4: ...",
                                 "locales.en.body", 4};
  BOOST_TEST(api::encode_error(error) ==
             R"({"error":{"code":"invalid_template","message":"locales.en.body: character 4: ...",)"
             R"("field":"locales.en.body","position":4}})");
  error.position.reset();
  BOOST_TEST(api::encode_error(error).find("position") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(delivery_rate_is_null_where_no_receipt_settled_a_task) {
  using domain::task_state;
  persistence::stats_report report;
  // sms takes receipts: 2 SENT still waiting, 1 DELIVERED, 1 UNDELIVERED.
  report.channels.push_back(
      {"sms",
       {{task_state::sent, 2}, {task_state::delivered, 1}, {task_state::undelivered, 1}},
       {},
       {}});
  // app gives none: SENT is final there.
  report.channels.push_back({"app", {{task_state::sent, 5}}, {}, {}});
  const auto body = boost::json::parse(api::encode_stats(report, {})).as_object();
  const auto& channels = body.at("channels").as_array();
  BOOST_TEST(channels.at(0).at("delivery_rate").to_number<double>() == 0.25);
  BOOST_TEST(channels.at(1).at("delivery_rate").is_null());
  // The total is sms's rate: app's final SENT tasks do not count as undelivered.
  BOOST_TEST(body.at("total").at("delivery_rate").to_number<double>() == 0.25);
  BOOST_TEST(body.at("total").at("sent").to_number<int>() == 7);

  persistence::stats_report without_receipts;
  without_receipts.channels.push_back({"app", {{task_state::sent, 5}}, {}, {}});
  const auto none = boost::json::parse(api::encode_stats(without_receipts, {})).as_object();
  BOOST_TEST(none.at("total").at("delivery_rate").is_null());
}

BOOST_AUTO_TEST_SUITE_END()
