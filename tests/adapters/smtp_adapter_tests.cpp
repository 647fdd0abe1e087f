#include "observability/metrics.hpp"
#include "providers/smtp_provider.hpp"
#include "support/herald_process.hpp"
#include "support/adapter_calls.hpp"
#include "tools/smtp_fake.hpp"

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <boost/test/unit_test.hpp>

using namespace herald;
using namespace herald::providers;
using namespace std::chrono_literals;
using herald::tools::smtp_fault;
namespace json = boost::json;

namespace {

// Python's standard email package reads the message as a mail program would and prints what it
// found; line breaks of the body come back as "\n".
constexpr const char* python_reader = R"(
import email, email.policy, json, sys
with open(sys.argv[1], 'rb') as f:
    m = email.message_from_bytes(f.read(), policy=email.policy.default)
text = m.get_body(preferencelist=('plain',))
html = m.get_body(preferencelist=('html',))
with open(sys.argv[2], 'w') as out:
    json.dump({'subject': str(m['Subject']), 'from_name': m['From'].addresses[0].display_name,
               'from': m['From'].addresses[0].addr_spec, 'to': m['To'].addresses[0].addr_spec,
               'message_id': str(m['Message-ID']),
               'text': text.get_content().replace('\r\n', '\n'),
               'html': None if html is None else html.get_content().replace('\r\n', '\n'),
               'defects': len(m.defects)}, out)
)";

json::object parse_with_python(const std::string& message) {
  test::temp_dir dir("herald-smtp");
  test::write_file(dir.file("reader.py"), python_reader);
  test::write_file(dir.file("message.eml"), message);
  const auto command = "python3 '" + dir.file("reader.py") + "' '" + dir.file("message.eml") +
                       "' '" + dir.file("found.json") + "'";
  BOOST_REQUIRE_MESSAGE(std::system(command.c_str()) == 0, "python3 could not read:\n" << message);
  return json::parse(test::read_file(dir.file("found.json"))).as_object();
}

std::string text_of(const json::object& found, const char* key) {
  return json::value_to<std::string>(found.at(key));
}

struct smtp_fixture {
  tools::smtp_fake fake{tools::smtp_fake::options{}};
  tools::smtp_fake_server server{fake};
  std::shared_ptr<metrics> counters = std::make_shared<metrics>();

  smtp_config config() const {
    smtp_config c;
    c.url = server.url();
    c.from = "notify@shop.example.com";
    c.from_name = "Shop 通知";
    c.require_tls = false; // the fake offers no STARTTLS
    c.timeout = 2000ms;
    return c;
  }

  static provider_request request(int n, const std::string& to = "user@example.com") {
    provider_request r;
    r.task_id = "tsk_" + std::to_string(n);
    r.channel = "email";
    r.recipient = to;
    r.provider_request_id = "hrq_" + std::to_string(n);
    r.title = "订单已发货 Order " + std::to_string(n) + " shipped";
    r.body = "您的订单已发货。\nOrder " + std::to_string(n) + " is on its way.";
    return r;
  }

  provider_result send(smtp_provider& adapter, int n, const std::string& to = "user@example.com") {
    test::provider_answers got;
    adapter.send(request(n, to), got.collect());
    BOOST_REQUIRE(got.wait_for(1));
    return got.results.front();
  }

  std::size_t config_errors() const {
    const auto text = counters->render();
    return text.find(R"(herald_provider_config_errors_total{channel="email"} )") ==
                   std::string::npos
               ? 0
               : 1;
  }
};

} // namespace

BOOST_FIXTURE_TEST_SUITE(smtp_adapter_tests, smtp_fixture)

BOOST_AUTO_TEST_CASE(smtp_delivers_a_mime_message_a_standard_parser_reads_back) {
  auto c = config();
  c.html = true;
  smtp_provider adapter{"email", c, counters};
  const auto result = send(adapter, 7);
  BOOST_TEST((result.outcome == call_outcome::success), result.detail);
  BOOST_TEST(result.detail == "hrq_7@shop.example.com"); // the Message-ID, without brackets
  const auto received = fake.received();
  BOOST_REQUIRE_EQUAL(received.size(), 1u);
  BOOST_TEST(received[0].accepted);
  BOOST_TEST(received[0].mail_from == "notify@shop.example.com");
  BOOST_TEST(received[0].recipients == std::vector<std::string>{"user@example.com"});
  const auto found = parse_with_python(received[0].data);
  BOOST_TEST(text_of(found, "subject") == "订单已发货 Order 7 shipped");
  BOOST_TEST(text_of(found, "from") == "notify@shop.example.com");
  BOOST_TEST(text_of(found, "from_name") == "Shop 通知");
  BOOST_TEST(text_of(found, "to") == "user@example.com");
  BOOST_TEST(text_of(found, "message_id") == "<hrq_7@shop.example.com>");
  BOOST_TEST(text_of(found, "text") == "您的订单已发货。\nOrder 7 is on its way.");
  BOOST_TEST(text_of(found, "html") == "您的订单已发货。<br>\nOrder 7 is on its way.");
  BOOST_TEST(found.at("defects").as_int64() == 0);
}

BOOST_AUTO_TEST_CASE(a_resend_carries_the_same_message_id_over_a_reused_connection) {
  smtp_provider adapter{"email", config(), counters};
  BOOST_TEST((send(adapter, 1).outcome == call_outcome::success));
  BOOST_TEST((send(adapter, 1).outcome == call_outcome::success));
  BOOST_TEST((send(adapter, 2).outcome == call_outcome::success));
  const auto received = fake.received();
  BOOST_REQUIRE_EQUAL(received.size(), 3u);
  BOOST_TEST(text_of(parse_with_python(received[0].data), "message_id") ==
             text_of(parse_with_python(received[1].data), "message_id"));
  BOOST_TEST(fake.connections() == 1u);
}

BOOST_AUTO_TEST_CASE(smtp_replies_4xx_are_retryable_and_5xx_permanent_with_the_reply_masked) {
  smtp_provider adapter{"email", config(), counters};
  fake.script({{smtp_fault::kind::reply_at_rcpt, 451, "4.3.0 try again later"},
               {smtp_fault::kind::reply_at_rcpt, 421, "4.7.0 closing"},
               {smtp_fault::kind::reply_at_rcpt, 550, "5.1.1 <user@example.com>: no such user"},
               {smtp_fault::kind::reply_after_data, 451, "4.3.0 queue full"},
               {smtp_fault::kind::reply_after_data, 554, "5.7.1 message refused as spam"},
               {smtp_fault::kind::reply_at_mail, 553, "5.7.1 sender not allowed"}});
  const auto busy = send(adapter, 1);
  BOOST_TEST((busy.outcome == call_outcome::retryable));
  BOOST_TEST(busy.detail == "SMTP 451 4.3.0 try again later");
  BOOST_TEST((send(adapter, 2).outcome == call_outcome::retryable));
  const auto unknown = send(adapter, 3);
  BOOST_TEST((unknown.outcome == call_outcome::permanent));
  BOOST_TEST(unknown.detail.find("SMTP 550 5.1.1") == 0u, unknown.detail);
  BOOST_TEST(unknown.detail.find("user@example.com") == std::string::npos, unknown.detail);
  BOOST_TEST((send(adapter, 4).outcome == call_outcome::retryable));
  const auto spam = send(adapter, 5);
  BOOST_TEST((spam.outcome == call_outcome::permanent));
  BOOST_TEST(spam.detail == "SMTP 554 5.7.1 message refused as spam");
  BOOST_TEST((send(adapter, 6).outcome == call_outcome::permanent));
  BOOST_TEST(config_errors() == 0u);
  BOOST_TEST((send(adapter, 7).outcome == call_outcome::success)); // the script is used up
}

BOOST_AUTO_TEST_CASE(no_reply_after_the_message_is_outcome_unknown_but_a_drop_before_it_is_not) {
  auto c = config();
  c.timeout = 1000ms;
  smtp_provider adapter{"email", c, counters};
  fake.script({{smtp_fault::kind::hang_after_data, 0, {}},
               {smtp_fault::kind::drop_after_data, 0, {}},
               {smtp_fault::kind::drop_at_rcpt, 0, {}}});
  const auto started = std::chrono::steady_clock::now();
  const auto hung = send(adapter, 1);
  BOOST_TEST((hung.outcome == call_outcome::timeout), hung.detail);
  BOOST_TEST((std::chrono::steady_clock::now() - started >= 1000ms));
  const auto dropped = send(adapter, 2);
  BOOST_TEST((dropped.outcome == call_outcome::timeout), dropped.detail);
  const auto before = send(adapter, 3);
  BOOST_TEST((before.outcome == call_outcome::retryable), before.detail);
  // The server took both messages it never answered: a resend would be recognised by its id.
  const auto received = fake.received();
  BOOST_REQUIRE_EQUAL(received.size(), 2u);
  BOOST_TEST(!received[0].accepted);
  BOOST_TEST(!received[1].accepted);
}

BOOST_AUTO_TEST_CASE(a_closed_port_is_retryable) {
  auto c = config();
  c.url = "smtp://127.0.0.1:" + std::to_string(test::free_port());
  smtp_provider adapter{"email", c, counters};
  BOOST_TEST((send(adapter, 1).outcome == call_outcome::retryable));
}

BOOST_AUTO_TEST_CASE(auth_sends_the_credentials_and_a_refused_password_is_a_config_error) {
  tools::smtp_fake guarded{{"smtp.fake.test", "mailer", "s3cret-pass", 1024 * 1024}};
  tools::smtp_fake_server guarded_server{guarded};
  auto c = config();
  c.url = guarded_server.url();
  c.username = "mailer";
  c.password = "s3cret-pass";
  c.require_tls = false; // allowed to a loopback host only
  smtp_provider adapter{"email", c, counters};
  BOOST_TEST((send(adapter, 1).outcome == call_outcome::success));
  BOOST_REQUIRE_EQUAL(guarded.received().size(), 1u);
  BOOST_TEST(guarded.received()[0].authenticated_as == "mailer");

  c.password = "wrong-pass";
  smtp_provider refused{"email", c, counters};
  const auto result = send(refused, 2);
  BOOST_TEST((result.outcome == call_outcome::retryable), result.detail);
  BOOST_TEST(result.detail.find("wrong-pass") == std::string::npos);
  BOOST_TEST(guarded.auth_failures() == 1u);
  BOOST_TEST(config_errors() == 1u);
  BOOST_TEST(guarded.received().size() == 1u);
}

BOOST_AUTO_TEST_CASE(require_tls_against_a_server_without_starttls_sends_nothing) {
  auto c = config();
  c.require_tls = true;
  smtp_provider adapter{"email", c, counters};
  const auto result = send(adapter, 1);
  BOOST_TEST((result.outcome == call_outcome::retryable), result.detail);
  BOOST_TEST(result.detail.find("TLS required") == 0u, result.detail);
  BOOST_TEST(config_errors() == 1u);
  BOOST_TEST(fake.received().empty());
}

BOOST_AUTO_TEST_CASE(a_recipient_that_is_no_address_is_permanent_and_never_sent) {
  smtp_provider adapter{"email", config(), counters};
  const auto result = send(adapter, 1, "not an address");
  BOOST_TEST((result.outcome == call_outcome::permanent));
  BOOST_TEST(fake.connections() == 0u);
}

BOOST_AUTO_TEST_CASE(the_config_is_checked_field_by_field) {
  auto c = config();
  BOOST_TEST(c.validate() == "");
  c.url = "http://mail.example.com";
  BOOST_TEST(c.validate().find("smtp url") == 0u);
  c = config();
  c.from = "Shop <notify@shop.example.com>";
  BOOST_TEST(c.validate().find("smtp from") == 0u);
  c = config();
  c.username = "mailer";
  BOOST_TEST(c.validate().find("smtp password") == 0u);
  c.password = "pw";
  c.require_tls.reset();
  BOOST_TEST(c.tls_required()); // a username makes TLS the default
  c.url = "smtp://mail.example.com:587";
  c.require_tls = false;
  BOOST_TEST(c.validate().find("in the clear") != std::string::npos);
  c.url = "smtps://mail.example.com:465"; // TLS from the first byte
  BOOST_TEST(c.validate() == "");
  c = config();
  c.max_connections = 0;
  BOOST_TEST(c.validate().find("max_connections") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
