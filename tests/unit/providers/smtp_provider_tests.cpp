#include "providers/smtp_provider.hpp"

#include <string>

#include <boost/test/unit_test.hpp>
#include <curl/curl.h>

using namespace herald;
using namespace herald::providers;

namespace {

outbound_answer ended(CURLcode code, long last_reply, std::string reply = {}) {
  outbound_answer answer;
  answer.code = code;
  answer.status = last_reply;
  answer.body = std::move(reply);
  return answer;
}

} // namespace

BOOST_AUTO_TEST_SUITE(smtp_provider_tests)

// One row of the table in smtp_provider.hpp each, in its order.
BOOST_AUTO_TEST_CASE(classify_smtp_follows_its_table) {
  BOOST_TEST((classify_smtp(ended(CURLE_OK, 250)).result.outcome == call_outcome::success));

  auto stopped = ended(CURLE_ABORTED_BY_CALLBACK, 354);
  stopped.stopped = true;
  BOOST_TEST((classify_smtp(stopped).result.outcome == call_outcome::timeout));

  for (auto code : {CURLE_LOGIN_DENIED, CURLE_USE_SSL_FAILED, CURLE_PEER_FAILED_VERIFICATION}) {
    const auto verdict = classify_smtp(ended(code, 535));
    BOOST_TEST((verdict.result.outcome == call_outcome::retryable), code);
    BOOST_TEST(verdict.config_error, code);
  }

  const auto busy =
      classify_smtp(ended(CURLE_SEND_ERROR, 452, "452-4.3.1 mailbox\r\n452 full\r\n"));
  BOOST_TEST((busy.result.outcome == call_outcome::retryable));
  BOOST_TEST(busy.result.detail == "SMTP 452-4.3.1 mailbox 452 full");
  BOOST_TEST(!busy.config_error);

  const auto refused = classify_smtp(ended(CURLE_WEIRD_SERVER_REPLY, 554));
  BOOST_TEST((refused.result.outcome == call_outcome::permanent));
  BOOST_TEST(refused.result.detail == "SMTP 554"); // no text came: the code alone

  for (auto code :
       {CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING})
    BOOST_TEST((classify_smtp(ended(code, 354)).result.outcome == call_outcome::timeout), code);

  const auto url = classify_smtp(ended(CURLE_URL_MALFORMAT, 0));
  BOOST_TEST((url.result.outcome == call_outcome::permanent));
  BOOST_TEST(url.config_error);

  for (auto code : {CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT, CURLE_RECV_ERROR,
                    CURLE_SSL_CONNECT_ERROR}) {
    const auto before = classify_smtp(ended(code, 250));
    BOOST_TEST((before.result.outcome == call_outcome::retryable), code);
    BOOST_TEST(before.result.detail.find("last reply 250") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(html_of_text_escapes_and_keeps_line_breaks) {
  BOOST_TEST(html_of_text("a < b & \"c\" 'd' > e") ==
             "a &lt; b &amp; &quot;c&quot; &#39;d&#39; &gt; e");
  BOOST_TEST(html_of_text("one\r\ntwo\nthree\rfour") == "one<br>\ntwo<br>\nthree<br>\nfour");
}

BOOST_AUTO_TEST_SUITE_END()
