// A bounded, deterministic mutation fuzzer over the provider parsers: seeds (real answers,
// pushes, callbacks, key files) mutated by byte flips, dictionary insertions, cuts, repeats
// and splices, each result checked against what the parser promises — not only "no throw".
// Fixed seed and counts: the same inputs every run, a few seconds under the sanitizers.

#include "domain/utf8.hpp"
#include "providers/failure_class.hpp"
#include "providers/jwt.hpp"
#include "providers/push_protocol.hpp"
#include "providers/service_account.hpp"
#include "providers/token_cache.hpp"
#include "providers/twilio_protocol.hpp"
#include "providers/wechat_protocol.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <boost/test/unit_test.hpp>

using namespace herald::providers;
using herald::call_outcome;
using namespace std::chrono_literals;

namespace {

/// Mutates seeds deterministically; what a coverage-guided fuzzer does, without the guidance.
class mutator {
public:
  mutator(std::vector<std::string> seeds, std::vector<std::string> dictionary)
      : seeds_(std::move(seeds)), dictionary_(std::move(dictionary)) {}

  std::string next() {
    std::string input = seeds_[below(seeds_.size())];
    for (auto edits = 1 + below(6); edits > 0; --edits)
      mutate(input);
    return input;
  }

private:
  std::size_t below(std::size_t n) { return n == 0 ? 0 : random_() % n; }

  void mutate(std::string& input) {
    switch (below(8)) {
    case 0: // a byte replaced, any value
      if (!input.empty())
        input[below(input.size())] = static_cast<char>(below(256));
      break;
    case 1: // a token inserted where it may mean something
      input.insert(below(input.size() + 1), dictionary_[below(dictionary_.size())]);
      break;
    case 2: // a range erased
      if (!input.empty()) {
        const auto at = below(input.size());
        input.erase(at, 1 + below(std::min<std::size_t>(16, input.size() - at)));
      }
      break;
    case 3: // cut
      input.resize(below(input.size() + 1));
      break;
    case 4: { // a range repeated
      if (input.empty())
        break;
      const auto at = below(input.size());
      const auto piece = input.substr(at, 1 + below(32));
      for (auto times = 1 + below(8); times > 0; --times)
        input.insert(at, piece);
      break;
    }
    case 5: { // spliced with another seed
      const auto& other = seeds_[below(seeds_.size())];
      const auto from = below(other.size() + 1);
      input = input.substr(0, below(input.size() + 1)) + other.substr(from);
      break;
    }
    case 6: // a byte replaced from the dictionary's alphabet
      if (!input.empty()) {
        const auto& word = dictionary_[below(dictionary_.size())];
        if (!word.empty())
          input[below(input.size())] = word[below(word.size())];
      }
      break;
    default: // a dictionary token replaces a range
      if (!input.empty()) {
        const auto at = below(input.size());
        input.replace(at, below(8), dictionary_[below(dictionary_.size())]);
      }
      break;
    }
  }

  std::vector<std::string> seeds_;
  std::vector<std::string> dictionary_;
  std::mt19937_64 random_{20261203};
};

/// What every classifier promises of its answer.
void check_classified(const classified_answer& answer, std::string_view input) {
  BOOST_TEST(herald::domain::is_valid_utf8(answer.result.detail), input);
  BOOST_TEST(answer.result.detail.size() <= 4 * max_body_excerpt, input);
  if (answer.token_invalid)
    BOOST_TEST((answer.result.outcome == call_outcome::retryable), input);
  if (answer.result.outcome == call_outcome::success)
    BOOST_TEST(!answer.config_error, input);
}

/// A token the parser accepts is one the cache can hold: a second get at once is answered
/// without a second fetch, however long or short its lifetime (a token is used for at least
/// half its life).
void check_token(const token_answer& token, std::string_view input) {
  BOOST_TEST(herald::domain::is_valid_utf8(token.error), input);
  if (token.access_token.empty())
    return;
  BOOST_TEST(token.expires_in.count() > 0, input);
  token_cache cache{[&](auto done) {
                      done(issued_token{token.access_token, token.expires_in});
                    },
                    1s};
  int answered = 0;
  cache.get([&](token_or_failure) { ++answered; });
  cache.get([&](token_or_failure) { ++answered; });
  BOOST_TEST(answered == 2, input);
  BOOST_TEST(cache.fetches() == 1u, input);
}

constexpr int rounds = 4000;
constexpr std::array<long, 10> statuses{200, 201, 204, 400, 401, 404, 429, 500, 503, 0};

const std::string finish_push =
    "<xml><ToUserName><![CDATA[gh_7f083739789a]]></ToUserName>"
    "<FromUserName><![CDATA[oia2TjuEGTNoeX76QEjQNrcURxG8]]></FromUserName>"
    "<CreateTime>1395658920</CreateTime><MsgType><![CDATA[event]]></MsgType>"
    "<Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>200163836</MsgID>"
    "<Status><![CDATA[failed:user block]]></Status></xml>";

const std::vector<std::string> json_dictionary{
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "0",
    "-1",
    "1e999",
    "9223372036854775807",
    "18446744073709551616",
    "\\u0000",
    "\\ud800",
    "\xff",
    "\xc3\xa9",
    "null",
    "true",
    "\"errcode\"",
    "\"errmsg\"",
    "\"msgid\"",
    "\"access_token\"",
    "\"expires_in\"",
    "\"code\"",
    "\"message\"",
    "\"sid\"",
    "\"status\"",
    "\"error\"",
    "\"details\"",
    "\"@type\"",
    "\"errorCode\"",
    "\"reason\"",
    "\"timestamp\"",
    "\"type.googleapis.com/google.firebase.fcm.v1.FcmError\"",
    "\"UNREGISTERED\"",
    "\"Unregistered\"",
    "40001",
    "45009",
    "20003",
    "\"name\"",
    "https://x?token=abc"};

} // namespace

BOOST_AUTO_TEST_SUITE(parser_fuzz_tests)

BOOST_AUTO_TEST_CASE(flat_xml_and_template_events) {
  mutator inputs{{finish_push, "<?xml version=\"1.0\"?><xml><A>1 &amp; 2</A><B/></xml>",
                  "<xml><List><Item><X>1</X></Item></List><MsgType>text</MsgType></xml>"},
                 {"<",
                  ">",
                  "</",
                  "/>",
                  "<![CDATA[",
                  "]]>",
                  "<!--",
                  "-->",
                  "<!DOCTYPE x [<!ENTITY e \"x\">]>",
                  "&amp;",
                  "&lt;",
                  "&#65;",
                  "&e;",
                  "<?xml?>",
                  "<a>",
                  "</a>",
                  "<MsgID>",
                  "</MsgID>",
                  "<Status>",
                  "</Status>",
                  "success",
                  "failed:",
                  "<CreateTime>9999999999</CreateTime>",
                  "\xef\xbb\xbf",
                  "\xff",
                  " a=\"1\""}};
  for (int round = 0; round < rounds; ++round) {
    const auto input = inputs.next();
    const auto fields = read_flat_xml(input);
    if (fields) {
      BOOST_TEST(input.size() <= max_push_bytes);
      for (auto leaf = fields->begin(); leaf != fields->end(); ++leaf)
        BOOST_TEST(std::none_of(fields->begin(), leaf,
                                [&](const auto& earlier) { return earlier.first == leaf->first; }),
                   input);
    }
    const auto event = parse_template_event(input);
    BOOST_TEST(herald::domain::is_valid_utf8(event.detail), input);
    if (event.result == wechat_event::kind::receipt) {
      BOOST_TEST(fields.has_value());
      BOOST_TEST(!event.message_id.empty());
      BOOST_TEST(std::all_of(event.message_id.begin(), event.message_id.end(),
                             [](char c) { return c >= '0' && c <= '9'; }),
                 input);
    }
  }
  BOOST_TEST(!read_flat_xml("<xml>" + std::string(max_push_bytes, ' ') + "</xml>").has_value());
}

BOOST_AUTO_TEST_CASE(forms_round_trip_and_status_callbacks) {
  mutator inputs{{"AccountSid=AC0001&MessageSid=SM0123456789abcdef0123456789abcdef"
                  "&MessageStatus=undelivered&ErrorCode=30003&To=%2B8613800000001",
                  "a=1&b=&c&=d&&e=%20+%2B"},
                 {"&", "=", "%", "%2", "%zz", "%00", "%FF", "+", "MessageSid=", "MessageStatus=",
                  "delivered", "failed", "received", "ErrorCode=", "\xff", "%e4%bd%a0"}};
  for (int round = 0; round < rounds; ++round) {
    const auto input = inputs.next();
    const auto params = form_decode(input);
    if (!params)
      continue;
    const auto again = form_decode(form_encode(*params));
    BOOST_TEST((again && *again == *params), input);
    // The signature reads the pairs sorted: any order of the same pairs signs the same.
    auto reversed = *params;
    std::reverse(reversed.begin(), reversed.end());
    BOOST_TEST(twilio_signature("token", "https://h/x", *params) ==
                   twilio_signature("token", "https://h/x", reversed),
               input);
    if (const auto update = parse_status_callback(*params)) {
      BOOST_TEST(!update->message_sid.empty());
      BOOST_TEST(herald::domain::is_valid_utf8(update->detail), input);
    }
  }
}

BOOST_AUTO_TEST_CASE(provider_answers_are_classified) {
  mutator inputs{{R"({"errcode":0,"errmsg":"ok","msgid":3662956322040938501})",
                  R"({"errcode":45009,"errmsg":"reach max api daily quota limit"})",
                  R"({"code":21211,"message":"The 'To' number is not valid.","status":400})",
                  R"({"sid":"SM0123456789abcdef0123456789abcdef","status":"queued"})",
                  R"({"error":{"code":404,"status":"NOT_FOUND","details":[{"@type":)"
                  R"("type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":)"
                  R"("UNREGISTERED"}]}})",
                  R"({"reason":"Unregistered","timestamp":1700000000000})",
                  R"({"name":"projects/p/messages/0:1"})"},
                 json_dictionary};
  for (int round = 0; round < rounds; ++round) {
    const auto input = inputs.next();
    const auto status = statuses[static_cast<std::size_t>(round) % statuses.size()];
    check_classified(classify_wechat_answer(status, input, 5s), input);
    check_classified(classify_twilio_answer(status, input, std::nullopt), input);
    check_classified(classify_fcm_answer(status, input, 5s), input);
    check_classified(classify_apns_answer(status, input, std::nullopt, "apns-id"), input);
    const auto resource = parse_message_resource(status, input);
    BOOST_TEST(herald::domain::is_valid_utf8(resource.detail), input);
  }
}

BOOST_AUTO_TEST_CASE(token_answers_give_tokens_the_cache_can_hold) {
  mutator inputs{{R"({"access_token":"ACCESS_TOKEN","expires_in":7200})",
                  R"({"errcode":40013,"errmsg":"invalid appid"})",
                  R"({"access_token":"ya29.c","expires_in":3599,"token_type":"Bearer"})",
                  R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})"},
                 json_dictionary};
  for (int round = 0; round < rounds; ++round) {
    const auto input = inputs.next();
    check_token(parse_token_answer(input), input);
    check_token(parse_oauth_token_answer(input), input);
    if (const auto answer = parse_answer_object(input))
      check_token(read_access_token(*answer), input);
  }
  // The extremes a mutation may miss.
  for (const std::string lifetime : {"1", "300", "301", "2147483648", "9223372036854775807"})
    check_token(parse_token_answer(R"({"access_token":"t","expires_in":)" + lifetime + "}"),
                lifetime);
}

BOOST_AUTO_TEST_CASE(base64url_decodes_only_canonical_text) {
  mutator inputs{{"", "AA", "AAE", "eyJhbGciOiJSUzI1NiJ9", "_-_-", "QUJDRA"},
                 {"A", "B", "Q", "=", "+", "/", "-", "_", "==", " ", "\xff"}};
  for (int round = 0; round < rounds; ++round) {
    const auto input = inputs.next();
    if (const auto bytes = base64url_decode(input))
      BOOST_TEST(base64url_encode(*bytes) == input, input);
  }
}

BOOST_AUTO_TEST_CASE(service_account_files_never_quote_the_key) {
  // Not a usable key (PEM parsing of a real one costs milliseconds per round): the parser's
  // JSON and field checks are what the mutations reach; the key check answers "no readable
  // private key" for the rest.
  const std::string secret_part = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC";
  const std::string file =
      R"({"type":"service_account","project_id":"p","private_key_id":"k1",)"
      R"("private_key":"-----BEGIN PRIVATE KEY-----\n)" +
      secret_part +
      R"(\n-----END PRIVATE KEY-----\n","client_email":"a@p.iam.gserviceaccount.com",)"
      R"("token_uri":"https://oauth2.googleapis.com/token"})";
  mutator inputs{{file},
                 {"\"", "{", "}", ",", ":", "null", "1", "\"\"", "http://", "\\n", "\xff",
                  "-----BEGIN ", "\"type\":", "\"token_uri\":", "\"private_key\":"}};
  for (int round = 0; round < rounds / 4; ++round) {
    const auto input = inputs.next();
    std::string problem;
    const auto account = parse_service_account(input, &problem);
    BOOST_TEST(!account.has_value(), input);
    BOOST_TEST(!problem.empty(), input);
    BOOST_TEST(problem.find(secret_part) == std::string::npos, input);
  }
}

BOOST_AUTO_TEST_SUITE_END()
