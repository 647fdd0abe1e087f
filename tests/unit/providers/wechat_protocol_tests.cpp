#include "domain/time.hpp"
#include "providers/wechat_protocol.hpp"

#include <cstdint>
#include <random>
#include <string>

#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;

namespace {

// The event WeChat's template message documentation shows for a delivered message.
const std::string delivered_event = "<xml>"
                                    "<ToUserName><![CDATA[gh_7f083739789a]]></ToUserName>"
                                    "<FromUserName><![CDATA[oia2TjuEGTNoeX76QEjQNrcURxG8]]>"
                                    "</FromUserName>"
                                    "<CreateTime>1395658920</CreateTime>"
                                    "<MsgType><![CDATA[event]]></MsgType>"
                                    "<Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event>"
                                    "<MsgID>200163836</MsgID>"
                                    "<Status><![CDATA[success]]></Status>"
                                    "</xml>";

std::string event_with_status(const std::string& status) {
  std::string xml = delivered_event;
  const std::string success = "<![CDATA[success]]>";
  return xml.replace(xml.find(success), success.size(), status);
}

std::string text_of(wechat_event::kind kind) {
  switch (kind) {
  case wechat_event::kind::receipt:
    return "receipt";
  case wechat_event::kind::ignored:
    return "ignored";
  case wechat_event::kind::malformed:
    break;
  }
  return "malformed";
}

} // namespace

BOOST_AUTO_TEST_SUITE(wechat_protocol_tests)

BOOST_AUTO_TEST_CASE(template_send_body_golden) {
  wechat_template_message message;
  message.openid = "oia2TjuEGTNoeX76QEjQNrcURxG8";
  message.template_id = "ngqIpbwh8bUfcSsECmogfXcV14J0tQlEpBO27izEYtY";
  message.data = {{"thing1", "Order \"42\" shipped"}, {"time2", "2026-12-02 10:00"}};
  message.url = "https://example.com/orders/42";
  message.client_msg_id = "hrq_0123456789abcdef0123456789abcdef";
  BOOST_TEST(template_send_body(message) ==
             R"({"touser":"oia2TjuEGTNoeX76QEjQNrcURxG8",)"
             R"("template_id":"ngqIpbwh8bUfcSsECmogfXcV14J0tQlEpBO27izEYtY",)"
             R"("url":"https://example.com/orders/42",)"
             R"("client_msg_id":"hrq_0123456789abcdef0123456789abcdef",)"
             R"("data":{"thing1":{"value":"Order \"42\" shipped"},)"
             R"("time2":{"value":"2026-12-02 10:00"}}})");
}

BOOST_AUTO_TEST_CASE(optional_fields_are_left_out) {
  wechat_template_message message;
  message.openid = "o1";
  message.template_id = "t1";
  message.data = {{"k", "first"}, {"k", "last"}};
  BOOST_TEST(template_send_body(message) ==
             R"({"touser":"o1","template_id":"t1","data":{"k":{"value":"last"}}})");
}

// The golden table: every errcode class herald distinguishes.
BOOST_AUTO_TEST_CASE(errcode_table) {
  struct row {
    std::int64_t errcode;
    call_outcome outcome;
    bool token_invalid;
    bool config_error;
    bool quota_exhausted;
  };
  constexpr auto retryable = call_outcome::retryable, permanent = call_outcome::permanent,
                 throttled = call_outcome::throttled;
  const row table[] = {
      {-1, retryable, false, false, false},    {40001, retryable, true, false, false},
      {40014, retryable, true, false, false},  {42001, retryable, true, false, false},
      {45009, throttled, false, false, true},  {45011, throttled, false, false, false},
      {45047, retryable, false, false, false}, {41001, permanent, false, true, false},
      {40013, permanent, false, true, false},  {40125, permanent, false, true, false},
      {40164, permanent, false, true, false},  {61004, permanent, false, true, false},
      {48001, permanent, false, true, false},  {48004, permanent, false, true, false},
      {40036, permanent, false, true, false},  {40037, permanent, false, true, false},
      {43004, permanent, false, false, false}, {40003, permanent, false, false, false},
      {47001, permanent, false, false, false}, {99999, permanent, false, false, false},
  };
  for (const auto& r : table) {
    const auto body = R"({"errcode":)" + std::to_string(r.errcode) + R"(,"errmsg":"some text"})";
    const auto answer = classify_wechat_answer(200, body, 5s);
    BOOST_TEST_CONTEXT("errcode " << r.errcode) {
      BOOST_TEST(to_string(answer.result.outcome) == to_string(r.outcome));
      BOOST_TEST(answer.token_invalid == r.token_invalid);
      BOOST_TEST(answer.config_error == r.config_error);
      BOOST_TEST(answer.quota_exhausted == r.quota_exhausted);
      BOOST_TEST(answer.result.retry_after.has_value() == (r.outcome != permanent));
      BOOST_TEST(answer.result.detail ==
                 "wechat errcode " + std::to_string(r.errcode) + ": some text");
    }
  }
}

BOOST_AUTO_TEST_CASE(the_minute_quota_pauses_for_a_minute) {
  const auto answer = classify_wechat_answer(
      200, R"({"errcode":45011,"errmsg":"api minute-quota reach limit"})", std::nullopt);
  BOOST_REQUIRE(answer.result.retry_after.has_value());
  BOOST_TEST(answer.result.retry_after->count() == 60000);
  BOOST_TEST(!classify_wechat_answer(200, R"({"errcode":45009,"errmsg":"daily"})", std::nullopt)
                  .result.retry_after.has_value()); // the channel's quota_pause applies
}

BOOST_AUTO_TEST_CASE(details_carry_errmsg_masked) {
  const auto answer = classify_wechat_answer(
      200, R"({"errcode":43004,"errmsg":"require subscribe rid: 61076919-303049b3-32283a08"})",
      std::nullopt);
  BOOST_TEST(answer.result.detail ==
             "wechat errcode 43004: require subscribe rid: 61076919-303049b3-32283a08");
  BOOST_TEST(classify_wechat_answer(200, R"({"errcode":40003})", std::nullopt).result.detail ==
             "wechat errcode 40003");
  BOOST_TEST(classify_wechat_answer(200,
                                    R"({"errcode":40001,"errmsg":"access_token=)"
                                    R"(47_ha6CkPTaOnMEvfeTATRZDuF-k6gmluPgJSxRV1M5bz invalid"})",
                                    std::nullopt)
                 .result.detail == "wechat errcode 40001: access_token=*** invalid");
}

BOOST_AUTO_TEST_CASE(success_keeps_msgid_digits_exactly) {
  struct row {
    const char* body;
    const char* message_id;
  };
  const row table[] = {
      {R"({"errcode":0,"errmsg":"ok","msgid":200228332})", "200228332"},
      // Past 2^53, where a double would round it.
      {R"({"errcode":0,"errmsg":"ok","msgid":3662956322040938501})", "3662956322040938501"},
      {R"({"errcode":0,"errmsg":"ok","msgid":18446744073709551615})", "18446744073709551615"},
      {R"({"errcode":0,"errmsg":"ok","msgid":"3147494441"})", "3147494441"},
      // Beyond 2^64 only a double is left, digits lost: no id rather than a wrong one.
      {R"({"errcode":0,"errmsg":"ok","msgid":36629563220409385019})", ""},
      {R"({"errcode":0,"errmsg":"ok","msgid":2.5})", ""},
      {R"({"errcode":0,"errmsg":"ok"})", ""},
  };
  for (const auto& r : table) {
    const auto answer = classify_wechat_answer(200, r.body, 5s);
    BOOST_TEST(to_string(answer.result.outcome) == "success", r.body);
    BOOST_TEST(answer.result.detail == r.message_id, r.body);
    BOOST_TEST(!answer.result.retry_after.has_value());
    BOOST_TEST(!answer.token_invalid);
  }
}

// HTTP 200 with a body that says nothing: WeChat took the call and may have sent the message.
BOOST_AUTO_TEST_CASE(unreadable_answers_leave_the_outcome_unknown) {
  for (const std::string body :
       {"", "<html>bad gateway</html>", R"({"errcode":0,"errmsg":"ok","msgid":2002)",
        R"({"errmsg":"ok"})", R"({"errcode":"0"})", "[0]", R"({"errcode":1.0})"}) {
    const auto answer = classify_wechat_answer(200, body, 5s);
    BOOST_TEST(to_string(answer.result.outcome) == "timeout", body);
    BOOST_TEST(answer.result.detail == "wechat answer unreadable, outcome unknown");
    BOOST_TEST(!answer.result.retry_after.has_value());
  }
}

BOOST_AUTO_TEST_CASE(other_http_statuses_follow_classify_http) {
  const auto unavailable = classify_wechat_answer(503, "busy", 7s);
  BOOST_TEST(to_string(unavailable.result.outcome) == "retryable");
  BOOST_TEST(unavailable.result.retry_after->count() == 7000);
  BOOST_TEST(unavailable.result.detail == "endpoint unavailable (503): busy");
  BOOST_TEST(to_string(classify_wechat_answer(429, "", 7s).result.outcome) == "throttled");
  BOOST_TEST(to_string(classify_wechat_answer(404, R"({"errcode":0})", 7s).result.outcome) ==
             "permanent");
  BOOST_TEST(to_string(classify_wechat_answer(302, "", 7s).result.outcome) == "permanent");
}

BOOST_AUTO_TEST_CASE(token_answers) {
  const auto token = parse_token_answer(R"({"access_token":"ACCESS_TOKEN","expires_in":7200})");
  BOOST_TEST(token.access_token == "ACCESS_TOKEN");
  BOOST_TEST(token.expires_in.count() == 7200);
  BOOST_TEST(token.error == "");
  const auto refused = parse_token_answer(R"({"errcode":40013,"errmsg":"invalid appid"})");
  BOOST_TEST(refused.access_token == "");
  BOOST_TEST(refused.error == "wechat errcode 40013: invalid appid");
  BOOST_TEST(parse_token_answer("<html/>").error == "wechat token answer unreadable");
  BOOST_TEST(
      parse_token_answer(R"({"errcode":0,"access_token":"T","expires_in":7200})").access_token ==
      "T");
  BOOST_TEST(parse_token_answer(R"({"access_token":"T"})").error != "");
}

// Vectors computed independently (Python hashlib) from the documented rule: sort, join, SHA-1.
BOOST_AUTO_TEST_CASE(signature_golden) {
  BOOST_TEST(wechat_signature("herald-token", "1714000000", "8731249") ==
             "450875ff470522da898051c4ecff0490831857ca");
  BOOST_TEST(wechat_signature("AAAAA", "1409659813", "1372623149") ==
             "aea4bea485da97e0dd0c1fdae5f4c542858bffb9");
  // The order of the arguments does not matter: they are sorted.
  BOOST_TEST(wechat_signature("8731249", "herald-token", "1714000000") ==
             "450875ff470522da898051c4ecff0490831857ca");
}

BOOST_AUTO_TEST_CASE(signature_verification) {
  const std::string good = "450875ff470522da898051c4ecff0490831857ca";
  BOOST_TEST(verify_wechat_signature("herald-token", "1714000000", "8731249", good));
  BOOST_TEST(!verify_wechat_signature("herald-token", "1714000001", "8731249", good));
  BOOST_TEST(!verify_wechat_signature("other-token", "1714000000", "8731249", good));
  BOOST_TEST(!verify_wechat_signature("herald-token", "1714000000", "8731249", good.substr(1)));
  BOOST_TEST(!verify_wechat_signature("herald-token", "1714000000", "8731249", ""));
  BOOST_TEST(!verify_wechat_signature("herald-token", "1714000000", "8731249",
                                      "450875FF470522DA898051C4ECFF0490831857CA"));
}

BOOST_AUTO_TEST_CASE(flat_xml_golden) {
  struct row {
    std::string xml;
    name_values fields;
  };
  const row table[] = {
      {"<xml><A><![CDATA[x]]></A><B>1 &amp; 2</B></xml>", {{"A", "x"}, {"B", "1 & 2"}}},
      {"<xml><A>&lt;&gt;&amp;&quot;&apos;</A></xml>", {{"A", "<>&\"'"}}},
      {"<xml><A><![CDATA[<b>&amp;</b>]]></A></xml>", {{"A", "<b>&amp;</b>"}}},
      {"<xml><A>a<![CDATA[b]]>c</A></xml>", {{"A", "abc"}}},
      {"<xml><A/><B></B><C >v</C ></xml>", {{"A", ""}, {"B", ""}, {"C", "v"}}},
      {"\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<xml>\n  <A> v </A>\n</xml>\n",
       {{"A", " v "}}},
      // Children with children of their own (lists in other events) are skipped.
      {"<xml><Event>x</Event><List><TemplateId>t</TemplateId><n><m/></n></List><B>b</B></xml>",
       {{"Event", "x"}, {"B", "b"}}},
      {"<xml></xml>", {}},
      {"<xml/>", {}},
  };
  for (const auto& r : table) {
    const auto fields = read_flat_xml(r.xml);
    BOOST_REQUIRE_MESSAGE(fields.has_value(), "refused " << r.xml);
    BOOST_TEST(fields->size() == r.fields.size(), r.xml);
    for (std::size_t i = 0; i < fields->size() && i < r.fields.size(); ++i) {
      BOOST_TEST((*fields)[i].first == r.fields[i].first, r.xml);
      BOOST_TEST((*fields)[i].second == r.fields[i].second, r.xml);
    }
  }
}

BOOST_AUTO_TEST_CASE(flat_xml_refusals) {
  const std::string refused[] = {
      "",
      "plain text",
      "<xml>",
      "<xml><A>v</A>",
      "<xml><A>v</B></xml>",
      "<xml><A>v</A></xml><xml/>",
      "<xml><A>v</A></xml>trailing",
      "<xml>text<A>v</A></xml>",
      "<xml><A a=\"1\">v</A></xml>",
      "<xml><A>&unknown;</A></xml>",
      "<xml><A>&#65;</A></xml>",
      "<xml><A>&amp</A></xml>",
      "<xml><A><![CDATA[v]]</A></xml>",
      "<xml><!-- comment --><A>v</A></xml>",
      "<?xml version=\"1.0\"?><!DOCTYPE xml [<!ENTITY e \"boom\">]><xml><A>&e;</A></xml>",
      "<xml><?pi x?><A>v</A></xml>",
      "<xml><A>1</A><A>2</A></xml>",
      "<xml><1A>v</1A></xml>",
      "<?xml version=\"1.0\"",
      "< xml></xml>",
      std::string(9, '<') + "xml",
      "<a><b><c><d><e><f><g><h><i><j>v</j></i></h></g></f></e></d></c></b></a>",
      "<xml><A>" + std::string(max_push_bytes, 'x') + "</A></xml>",
  };
  for (const auto& xml : refused)
    BOOST_TEST(!read_flat_xml(xml).has_value(), "accepted " << xml.substr(0, 80));
}

BOOST_AUTO_TEST_CASE(template_event_golden) {
  struct row {
    std::string status;
    domain::receipt_status expected;
    std::string detail;
  };
  const row table[] = {
      {"<![CDATA[success]]>", domain::receipt_status::delivered, ""},
      {"<![CDATA[failed:user block]]>", domain::receipt_status::undelivered, "user block"},
      {"<![CDATA[failed: system failed]]>", domain::receipt_status::undelivered, "system failed"},
      {"<![CDATA[failed]]>", domain::receipt_status::undelivered, "failed"},
      {"success", domain::receipt_status::delivered, ""},
  };
  for (const auto& r : table) {
    const auto event = parse_template_event(event_with_status(r.status));
    BOOST_TEST_CONTEXT(r.status) {
      BOOST_TEST(text_of(event.result) == "receipt");
      BOOST_TEST(to_string(event.status) == to_string(r.expected));
      BOOST_TEST(event.detail == r.detail);
      BOOST_TEST(event.message_id == "200163836");
      BOOST_TEST(event.openid == "oia2TjuEGTNoeX76QEjQNrcURxG8");
      BOOST_TEST(domain::format_rfc3339(event.occurred_at) == "2014-03-24T11:02:00.000000Z");
    }
  }
}

// WeChat pushes every message and event of the account to the same URL.
BOOST_AUTO_TEST_CASE(other_pushes_are_ignored) {
  const auto subscribe = parse_template_event(
      "<xml><ToUserName><![CDATA[gh_1]]></ToUserName><FromUserName><![CDATA[o1]]></FromUserName>"
      "<CreateTime>1</CreateTime><MsgType><![CDATA[event]]></MsgType>"
      "<Event><![CDATA[subscribe]]></Event></xml>");
  BOOST_TEST(text_of(subscribe.result) == "ignored");
  BOOST_TEST(subscribe.detail == "ignored event: subscribe");
  const auto text = parse_template_event(
      "<xml><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[hi]]></Content></xml>");
  BOOST_TEST(text_of(text.result) == "ignored");
  BOOST_TEST(text.detail == "ignored message: text");
  const auto popup = parse_template_event(
      "<xml><MsgType><![CDATA[event]]></MsgType><Event><![CDATA[subscribe_msg_popup_event]]>"
      "</Event><SubscribeMsgPopupEvent><List><TemplateId><![CDATA[t]]></TemplateId></List>"
      "<List><TemplateId><![CDATA[u]]></TemplateId></List></SubscribeMsgPopupEvent></xml>");
  BOOST_TEST(text_of(popup.result) == "ignored");
}

BOOST_AUTO_TEST_CASE(broken_template_events_are_malformed) {
  auto without = [](const std::string& element) {
    std::string xml = delivered_event;
    const auto start = xml.find("<" + element + ">");
    const auto end = xml.find("</" + element + ">") + element.size() + 3;
    return xml.erase(start, end - start);
  };
  auto replaced = [](const std::string& from, const std::string& to) {
    std::string xml = delivered_event;
    return xml.replace(xml.find(from), from.size(), to);
  };
  const std::string broken[] = {
      without("MsgID"),
      without("FromUserName"),
      without("CreateTime"),
      without("Status"),
      without("MsgType"),
      replaced("200163836", "2001x3836"),
      replaced("200163836", "123456789012345678901"),
      replaced("1395658920", "-1"),
      replaced("1395658920", "99999999999"),
      replaced("<![CDATA[oia2TjuEGTNoeX76QEjQNrcURxG8]]>", "<![CDATA[two words]]>"),
      event_with_status("<![CDATA[delivered]]>"),
      "not xml at all",
  };
  for (const auto& xml : broken) {
    const auto event = parse_template_event(xml);
    BOOST_TEST(text_of(event.result) == "malformed", xml);
    BOOST_TEST(!event.detail.empty());
    BOOST_TEST(event.detail.find("oia2TjuEGTNoeX76QEjQNrcURxG8") == std::string::npos);
  }
}

// Every cut of a push, every cut of an answer, and random bytes: an answer, never a crash.
BOOST_AUTO_TEST_CASE(truncated_and_random_input_never_throws) {
  for (std::size_t size = 0; size < delivered_event.size(); ++size) {
    const auto cut = delivered_event.substr(0, size);
    BOOST_CHECK_NO_THROW(read_flat_xml(cut));
    BOOST_TEST(text_of(parse_template_event(cut).result) == "malformed");
  }
  const std::string success = R"({"errcode":0,"errmsg":"ok","msgid":200228332})";
  for (std::size_t size = 0; size < success.size(); ++size)
    BOOST_TEST(to_string(classify_wechat_answer(200, success.substr(0, size), 1s).result.outcome) ==
               "timeout");

  std::mt19937 random{20261202};
  const char symbols[] = "<>/![]CDAT&;ltgmpquos\"'=? xmlMsgIDEvent\x00\xff";
  const std::string alphabet(symbols, sizeof symbols - 1);
  for (int round = 0; round < 20000; ++round) {
    std::string input;
    if (round % 2 == 0) {
      // a mutation of the real event
      input = delivered_event;
      for (int edits = 1 + static_cast<int>(random() % 4); edits > 0; --edits)
        input[random() % input.size()] = alphabet[random() % alphabet.size()];
    } else {
      input.resize(random() % 120);
      for (auto& c : input)
        c = alphabet[random() % alphabet.size()];
    }
    BOOST_CHECK_NO_THROW(parse_template_event(input));
    BOOST_CHECK_NO_THROW(classify_wechat_answer(200, input, std::nullopt));
    BOOST_CHECK_NO_THROW(parse_token_answer(input));
  }
  BOOST_TEST(!read_flat_xml(std::string(10000, '<')).has_value());
  std::string deep;
  for (int i = 0; i < 5000; ++i)
    deep += "<a>";
  BOOST_TEST(!read_flat_xml(deep).has_value());
}

BOOST_AUTO_TEST_SUITE_END()
