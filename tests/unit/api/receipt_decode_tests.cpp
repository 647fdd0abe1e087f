// Review finding (issue 7): decode_receipt takes any JSON string as a provider id, NUL and
// other control characters included. No task can have such an id (herald's request ids and
// the provider message ids it keeps are printable ASCII), and on PostgreSQL a "\u0000" fails
// the whole record_receipts batch it travels in. Such a receipt is malformed: 400, like the
// control characters POST /v1/messages refuses.
#include "api/json_codec.hpp"

#include <string>
#include <variant>

#include <boost/test/unit_test.hpp>

namespace {

std::string receipt_body(const std::string& id_field, const std::string& id_json,
                         const std::string& detail_json = "") {
  return R"({"type":"herald.receipt","data":{")" + id_field + R"(":")" + id_json +
         R"(","status":"delivered","occurred_at":"2026-12-03T10:00:00Z","detail":")" + detail_json +
         R"("}})";
}

} // namespace

BOOST_AUTO_TEST_SUITE(receipt_decode_tests)

BOOST_AUTO_TEST_CASE(a_plain_id_is_taken) {
  auto decoded = herald::api::decode_receipt(receipt_body("provider_request_id", "hrq_1"));
  BOOST_TEST(std::holds_alternative<herald::api::receipt_callback_body>(decoded));
}

BOOST_AUTO_TEST_CASE(ids_with_control_characters_are_refused) {
  for (const std::string field : {"provider_request_id", "provider_message_id"})
    for (const std::string id :
         {R"(hrq_1\u0000)", R"(hrq_1\n)", R"(\u001fhrq_1)", R"(hrq\u007f)"}) {
      auto decoded = herald::api::decode_receipt(receipt_body(field, id));
      BOOST_TEST_CONTEXT(field << " = " << id) {
        auto* error = std::get_if<herald::domain::validation_error>(&decoded);
        BOOST_TEST_REQUIRE(error != nullptr);
        BOOST_TEST(error->status == 400);
        BOOST_TEST(error->field == "data." + field);
      }
    }
}

BOOST_AUTO_TEST_CASE(a_long_detail_is_masked_before_it_is_cut) {
  // The number straddles the 1000-byte limit: cut first, "+86138123" would stay in clear.
  const auto detail = std::string(990, 'a') + " +8613812345678";
  auto decoded = herald::api::decode_receipt(receipt_body("provider_request_id", "hrq_1", detail));
  auto* body = std::get_if<herald::api::receipt_callback_body>(&decoded);
  BOOST_TEST_REQUIRE(body != nullptr);
  BOOST_TEST(body->detail == std::string(990, 'a') + " ***5678");
}

BOOST_AUTO_TEST_SUITE_END()
