// POST /v1/messages/batch bodies: what refuses one item and what refuses the whole request,
// and the answer's shape (docs/api.md).

#include "api/json_codec.hpp"

#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
namespace json = boost::json;

namespace {

std::string event(const std::string& biz_id) {
  return R"({"biz_type":"ORDER_SHIPPED","biz_id":")" + biz_id + R"(","user_id":"u-1"})";
}

std::string batch_of(const std::vector<std::string>& items) {
  std::string body = R"({"messages":[)";
  for (std::size_t i = 0; i < items.size(); ++i)
    body += (i == 0 ? "" : ",") + items[i];
  return body + "]}";
}

std::vector<api::batch_item> items_of(const std::string& body) {
  auto result = api::decode_batch_request(body);
  if (auto* error = std::get_if<domain::validation_error>(&result))
    BOOST_FAIL("unexpected refusal: " << error->message << " (field " << error->field << ")");
  return std::get<std::vector<api::batch_item>>(result);
}

domain::validation_error refused(const std::string& body) {
  auto result = api::decode_batch_request(body);
  BOOST_REQUIRE_MESSAGE(std::holds_alternative<domain::validation_error>(result),
                        "expected a refusal of " << body.substr(0, 200));
  return std::get<domain::validation_error>(result);
}

const domain::validation_error& item_error(const api::batch_item& item) {
  BOOST_REQUIRE(std::holds_alternative<domain::validation_error>(item));
  return std::get<domain::validation_error>(item);
}

} // namespace

BOOST_AUTO_TEST_SUITE(batch_codec_tests)

BOOST_AUTO_TEST_CASE(each_item_is_decoded_as_a_single_post_in_order) {
  auto items = items_of(batch_of({event("o-1"), event("o-2")}));
  BOOST_REQUIRE_EQUAL(items.size(), 2u);
  BOOST_TEST(std::get<domain::message_request>(items[0]).biz_id == "o-1");
  BOOST_TEST(std::get<domain::message_request>(items[1]).biz_id == "o-2");
}

BOOST_AUTO_TEST_CASE(a_bad_item_is_refused_alone_naming_its_index) {
  auto items = items_of(batch_of({
      event("o-1"),
      R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-2","user_id":42})",
      R"("not an object")",
      R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-4"})",
      R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-5","user_id":"u","colour":"red"})",
      R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-6","biz_id":"o-6b","user_id":"u"})",
      R"({"biz_type":"ORDER_SHIPPED","biz_id":"o-7","user_id":"u","params":{"n":1e999999}})",
      event("o-8"),
  }));
  BOOST_REQUIRE_EQUAL(items.size(), 8u);
  BOOST_TEST(std::holds_alternative<domain::message_request>(items[0]));
  BOOST_TEST(item_error(items[1]).field == "messages[1].user_id");
  BOOST_TEST(item_error(items[1]).status == 400);
  BOOST_TEST(item_error(items[2]).field == "messages[2]");
  BOOST_TEST(item_error(items[2]).message.find("a string") != std::string::npos);
  BOOST_TEST(item_error(items[3]).field == "messages[3].user_id");
  BOOST_TEST(item_error(items[4]).field == "messages[4].colour");
  BOOST_TEST(item_error(items[5]).code == "duplicate_key");
  BOOST_TEST(item_error(items[5]).field == "messages[5].biz_id");
  BOOST_TEST(item_error(items[6]).field == "messages[6].params.n");
  BOOST_TEST(std::get<domain::message_request>(items[7]).biz_id == "o-8");
}

BOOST_AUTO_TEST_CASE(what_is_wrong_outside_the_items_refuses_the_request) {
  struct refusal {
    std::string body;
    std::string code;
    std::string field;
  };
  std::vector<std::string> too_many(api::max_batch_items + 1, event("o"));
  for (const auto& c : std::vector<refusal>{
           {"not json", "invalid_request", ""},
           {"[]", "invalid_request", ""},
           {"{}", "invalid_request", "messages"},
           {R"({"messages":{}})", "invalid_request", "messages"},
           {R"({"messages":[]})", "invalid_request", "messages"},
           {batch_of(too_many), "invalid_request", "messages"},
           {R"({"messages":[)" + event("o") + R"(],"extra":1})", "invalid_request", "extra"},
           {R"({"messages":[],"messages":[)" + event("o") + "]}", "duplicate_key", "messages"},
       }) {
    BOOST_TEST_CONTEXT(c.body.substr(0, 80)) {
      auto error = refused(c.body);
      BOOST_TEST(error.status == 400);
      BOOST_TEST(error.code == c.code);
      BOOST_TEST(error.field == c.field);
    }
  }
  std::vector<std::string> most(api::max_batch_items, event("o"));
  BOOST_TEST(items_of(batch_of(most)).size() == api::max_batch_items);
}

BOOST_AUTO_TEST_CASE(items_may_nest_as_deep_as_a_single_post) {
  auto nested = [](unsigned depth) { // an event `depth` levels deep, as a single body
    return R"({"biz_type":"T","biz_id":"b","user_id":"u","x":)" + std::string(depth - 1, '[') +
           std::string(depth - 1, ']') + "}";
  };
  // The item's own nesting is within the limit: the item is refused for its unknown field
  // only, not the request for its depth.
  auto items = items_of(batch_of({nested(api::default_max_json_depth)}));
  BOOST_TEST(item_error(items[0]).field == "messages[0].x");
  auto error = refused(batch_of({nested(api::default_max_json_depth + 1)}));
  BOOST_TEST(error.message.find("too deep") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(answers_carry_each_items_status_in_order) {
  persistence::claim_result created{
      "msg_1", {{"tsk_1", "sms", domain::task_state::pending, true, std::nullopt, ""}}, {}};
  persistence::claim_result existing{
      "msg_2", {{"tsk_2", "sms", domain::task_state::sent, false, std::nullopt, ""}}, {}};
  std::vector<api::batch_answer> answers{
      created, existing,
      api::batch_item_error(
          2, {422, "unknown_channel", "channel 'fax' is not configured", "channels"}),
      domain::validation_error{503, "unavailable", "the database did not answer", ""}};
  auto body = json::parse(api::encode_batch_answers(answers, "trace-1")).as_object();
  BOOST_TEST(body.size() == 1u);
  auto results = body.at("results").as_array();
  BOOST_REQUIRE_EQUAL(results.size(), 4u);
  // A claim is the single POST's body with its status first.
  auto first = results[0].as_object();
  BOOST_TEST(first.at("status").as_int64() == 202);
  json::object single = json::parse(api::encode_claim_result(created, "trace-1")).as_object();
  first.erase("status");
  BOOST_TEST(first == single, json::serialize(first) << " vs " << json::serialize(single));
  BOOST_TEST(results[1].at("status").as_int64() == 200);
  BOOST_TEST(results[1].at("tasks").at(0).at("duplicate").as_bool());
  BOOST_TEST(results[1].at("tasks").at(0).at("status").as_string() == "SENT");
  BOOST_TEST(results[2].at("status").as_int64() == 422);
  BOOST_TEST(results[2].at("error").at("code").as_string() == "unknown_channel");
  BOOST_TEST(results[2].at("error").at("field").as_string() == "messages[2].channels");
  BOOST_TEST(results[3].at("status").as_int64() == 503);
  BOOST_TEST(!results[3].at("error").as_object().contains("field"));
  BOOST_TEST(!results[3].as_object().contains("message_id"));
}

BOOST_AUTO_TEST_SUITE_END()
