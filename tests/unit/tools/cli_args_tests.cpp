#include "tools/cli_args.hpp"
#include "tools/load_config.hpp"
#include "tools/sim_provider_config.hpp"

#include <boost/test/unit_test.hpp>

using namespace herald::tools;
using args = std::vector<std::string>;

namespace {

/// The usage error's message, or "" when `parse` accepted the arguments.
template <typename Parse> std::string usage_message(Parse parse) {
  try {
    parse();
  } catch (const usage_error& e) {
    return e.what();
  }
  return {};
}

bool mentions(const std::string& message, const std::string& part) {
  return message.find(part) != std::string::npos;
}

/// The usage error of `herald load --target 127.0.0.1:80 <a>`, or "".
std::string load_usage_message(args a) {
  a.insert(a.begin(), {"--target", "127.0.0.1:80"});
  return usage_message([&] { parse_load_args(a); });
}

} // namespace

BOOST_AUTO_TEST_SUITE(cli_args_tests)

BOOST_AUTO_TEST_CASE(host_port_forms) {
  auto v4 = parse_host_port("--x", "127.0.0.1:8080");
  BOOST_TEST(v4.host == "127.0.0.1");
  BOOST_TEST(v4.port == 8080);
  auto v6 = parse_host_port("--x", "[::1]:9");
  BOOST_TEST(v6.host == "::1");
  BOOST_TEST(v6.to_string() == "[::1]:9");
  BOOST_TEST(parse_host_port("--x", "localhost:0", true).port == 0);
  for (auto bad : {"", "8080", ":80", "host:", "host:x", "host:65536", "host:0", "host:-1"})
    BOOST_TEST(!usage_message([&] { parse_host_port("--x", bad); }).empty(), bad);
}

BOOST_AUTO_TEST_CASE(loopback_hosts) {
  for (auto host : {"127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"})
    BOOST_TEST(is_loopback_host(host), host);
  for (auto host : {"10.0.0.1", "0.0.0.0", "128.0.0.1", "127.0.0", "127.0.0.1.5", "example.com",
                    "127.0.0.256", "::", "localhost.example.com"})
    BOOST_TEST(!is_loopback_host(host), host);
}

BOOST_AUTO_TEST_CASE(numbers_and_lists) {
  BOOST_TEST(parse_rate("--r", "0.25") == 0.25);
  BOOST_TEST(parse_rate("--r", "1") == 1.0);
  for (auto bad : {"", "-0.1", "1.5", "nan", "0.1x", "inf"})
    BOOST_TEST(!usage_message([&] { parse_rate("--r", bad); }).empty(), bad);
  BOOST_TEST(parse_count("--n", "42", 1, 100) == 42u);
  for (auto bad : {"0", "101", "", "-1", "4.2", "1e3", "99999999999999999999999"})
    BOOST_TEST(!usage_message([&] { parse_count("--n", bad, 1, 100); }).empty(), bad);
  BOOST_TEST(parse_name_list("--c", "sms,wechat") == (args{"sms", "wechat"}));
  for (auto bad : {"", "sms,", ",sms", "sms,,app", "sms,sms", "s ms"})
    BOOST_TEST(!usage_message([&] { parse_name_list("--c", bad); }).empty(), bad);
}

BOOST_AUTO_TEST_CASE(option_parser_applies_options_in_order) {
  std::vector<std::string> applied;
  bool quiet = false;
  option_parser parser("demo");
  parser
      .value("--name", [&](const auto& name, const auto& v) { applied.push_back(name + "=" + v); })
      .flag("--quiet", quiet);
  parser.parse({"--name", "a", "--quiet", "--name=b"});
  BOOST_TEST(applied == (args{"--name=a", "--name=b"})); // both forms; the last one wins
  BOOST_TEST(quiet);
  BOOST_TEST(parser.seen("--name"));
  BOOST_TEST(parser.seen("--quiet"));
  BOOST_TEST(!parser.seen("--other"));
  BOOST_TEST(!parser.help());
}

BOOST_AUTO_TEST_CASE(option_parser_knows_help_and_nothing_undeclared) {
  bool quiet = false;
  auto parser_for = [&] {
    option_parser parser("demo");
    parser.value("--name", [](const auto&, const auto&) {}).flag("--quiet", quiet);
    return parser;
  };
  auto help = parser_for();
  help.parse({"--help"});
  BOOST_TEST(help.help());
  BOOST_TEST(!quiet);

  auto error = [&](args a) { return usage_message([&] { parser_for().parse(a); }); };
  BOOST_TEST(error({"--bogus"}) == "unknown option --bogus (see herald demo --help)");
  BOOST_TEST(error({"--name"}) == "--name needs a value");
  BOOST_TEST(error({"--quiet=yes"}) == "--quiet takes no value");
  BOOST_TEST(error({"--help=1"}) == "--help takes no value");
  BOOST_TEST(error({"stray"}) == "unexpected argument 'stray'");
  BOOST_TEST(error({}) == "");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(load_config_tests)

BOOST_AUTO_TEST_CASE(defaults_and_every_option) {
  auto defaults = parse_load_args({"--target", "127.0.0.1:8080"});
  BOOST_TEST(defaults.events == 1000u);
  BOOST_TEST(defaults.channels == (args{"sms", "wechat", "app"}));
  BOOST_TEST(defaults.provider_channels == defaults.channels);
  BOOST_TEST(!defaults.provider);
  BOOST_TEST(!defaults.json);

  auto all = parse_load_args({"--target=localhost:1",
                              "--events",
                              "5",
                              "--users",
                              "2",
                              "--channels",
                              "sms,email",
                              "--duplicate-ratio",
                              "0.5",
                              "--concurrency",
                              "3",
                              "--late-duplicates",
                              "0.2",
                              "--provider",
                              "127.0.0.1:9",
                              "--provider-channels",
                              "sms",
                              "--reset-provider",
                              "--drain-timeout-s",
                              "7",
                              "--request-timeout-ms",
                              "500",
                              "--json",
                              "--biz-prefix",
                              "p-",
                              "--to-from-channel",
                              "--seed",
                              "9"});
  BOOST_TEST(all.events == 5u);
  BOOST_TEST(all.users == 2u);
  BOOST_TEST(all.channels == (args{"sms", "email"}));
  BOOST_TEST(all.duplicate_ratio == 0.5);
  BOOST_TEST(all.concurrency == 3u);
  BOOST_TEST(all.late_duplicates == 0.2);
  BOOST_TEST(all.provider->port == 9);
  BOOST_TEST(all.provider_channels == args{"sms"});
  BOOST_TEST(all.reset_provider);
  BOOST_TEST(all.drain_timeout.count() == 7);
  BOOST_TEST(all.request_timeout.count() == 500);
  BOOST_TEST(all.json);
  BOOST_TEST(all.biz_prefix == "p-");
  BOOST_TEST(all.to_from_channel);
  BOOST_TEST(all.seed == 9u);
  BOOST_TEST(parse_load_args({"--help"}).help);
}

BOOST_AUTO_TEST_CASE(usage_errors_name_the_problem) {
  auto error = [](args a) { return usage_message([&] { parse_load_args(a); }); };
  BOOST_TEST(mentions(error({}), "--target"));
  BOOST_TEST(mentions(error({"--target", "10.0.0.1:8080"}), "loopback"));
  BOOST_TEST(
      mentions(error({"--target", "127.0.0.1:80", "--provider", "192.168.1.1:9"}), "loopback"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:80", "--events", "0"}), "--events"));
  BOOST_TEST(
      mentions(error({"--target", "127.0.0.1:80", "--concurrency", "1000"}), "--concurrency"));
  BOOST_TEST(
      mentions(error({"--target", "127.0.0.1:80", "--duplicate-ratio", "2"}), "--duplicate-ratio"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:80", "--bogus"}), "--bogus"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:80", "stray"}), "stray"));
  BOOST_TEST(mentions(error({"--target"}), "needs a value"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:80", "--json=yes"}), "takes no value"));
  BOOST_TEST(
      mentions(error({"--target", "127.0.0.1:80", "--provider-channels", "sms"}), "--provider"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:80", "--biz-prefix", "a b"}), "--biz-prefix"));
}

BOOST_AUTO_TEST_CASE(one_target_or_several) {
  auto one = parse_load_args({"--target", "127.0.0.1:8080"});
  BOOST_TEST(one.targets.size() == 1u);
  BOOST_TEST(one.targets[0].port == 8080);
  BOOST_TEST(targets_text(one.targets) == "127.0.0.1:8080");

  // A comma-separated list, repeated --target, or both: every address in the order given.
  auto listed = parse_load_args({"--target", "127.0.0.1:8081,127.0.0.1:8082"});
  BOOST_TEST(targets_text(listed.targets) == "127.0.0.1:8081,127.0.0.1:8082");
  auto repeated = parse_load_args(
      {"--target", "127.0.0.1:8081", "--target=localhost:8082,[::1]:8083", "--events", "5"});
  BOOST_TEST(repeated.targets.size() == 3u);
  BOOST_TEST(repeated.targets[1].host == "localhost");
  BOOST_TEST(repeated.targets[2].host == "::1");
  BOOST_TEST(targets_text(repeated.targets) == "127.0.0.1:8081,localhost:8082,[::1]:8083");
  BOOST_TEST(repeated.events == 5u);

  auto error = [](args a) { return usage_message([&] { parse_load_args(a); }); };
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:1,10.0.0.1:2"}), "loopback"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:1,"}), "HOST:PORT"));
  BOOST_TEST(mentions(error({"--target", ",127.0.0.1:1"}), "HOST:PORT"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:1,127.0.0.1:1"}), "twice"));
  BOOST_TEST(mentions(error({"--target", "127.0.0.1:1", "--target", "127.0.0.1:1"}), "twice"));
  BOOST_TEST(mentions(load_usage(), "--target HOST:PORT[,HOST:PORT...]"));
}

BOOST_AUTO_TEST_CASE(open_loop_and_batch_options) {
  auto closed = parse_load_args({"--target", "127.0.0.1:8080"});
  BOOST_TEST(!closed.rate);
  BOOST_TEST(closed.batch == 0u);
  BOOST_TEST(closed.concurrency == 8u);

  // An open loop needs connections for every request in flight: its default is larger.
  auto open = parse_load_args({"--target", "127.0.0.1:8080", "--rate", "500", "--batch", "100"});
  BOOST_TEST(*open.rate == 500u);
  BOOST_TEST(open.batch == 100u);
  BOOST_TEST(open.concurrency == open_loop_concurrency);
  auto given = parse_load_args({"--target", "127.0.0.1:8080", "--concurrency", "4", "--rate=9"});
  BOOST_TEST(given.concurrency == 4u);
  BOOST_TEST(*given.rate == 9u);

  auto error = load_usage_message;
  BOOST_TEST(mentions(error({"--rate", "0"}), "--rate"));
  BOOST_TEST(mentions(error({"--rate", "fast"}), "--rate"));
  BOOST_TEST(mentions(error({"--batch", "0"}), "--batch"));
  BOOST_TEST(mentions(error({"--batch", "1001"}), "--batch"));
  BOOST_TEST(error({"--batch", "1000"}).empty());
}

BOOST_AUTO_TEST_CASE(receipt_and_fallback_options) {
  auto defaults = parse_load_args({"--target", "127.0.0.1:8080"});
  BOOST_TEST(defaults.receipt_channels.empty());
  BOOST_TEST(defaults.fallbacks.empty());
  BOOST_TEST(defaults.settle_timeout.count() == 300);

  auto options = parse_load_args({"--target", "127.0.0.1:8080", "--receipt-channels", "sms,wechat",
                                  "--fallbacks", "sms:app,wechat:sms", "--settle-s", "45"});
  BOOST_TEST(options.receipt_channels == (args{"sms", "wechat"}));
  BOOST_TEST(options.fallbacks.size() == 2u);
  BOOST_TEST(options.fallbacks.at("sms") == "app");
  BOOST_TEST(options.fallbacks.at("wechat") == "sms");
  BOOST_TEST(options.settle_timeout.count() == 45);

  auto error = load_usage_message;
  BOOST_TEST(mentions(error({"--fallbacks", "sms"}), "CHANNEL:FALLBACK"));
  BOOST_TEST(mentions(error({"--fallbacks", "sms:"}), "CHANNEL:FALLBACK"));
  BOOST_TEST(mentions(error({"--fallbacks", "a:b:c"}), "CHANNEL:FALLBACK"));
  BOOST_TEST(mentions(error({"--fallbacks", "sms:sms"}), "itself"));
  BOOST_TEST(mentions(error({"--fallbacks", "sms:app,sms:email"}), "twice"));
  BOOST_TEST(mentions(error({"--settle-s", "0"}), "--settle-s"));
  BOOST_TEST(mentions(error({"--receipt-channels", ""}), "--receipt-channels"));
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(sim_provider_config_tests)

BOOST_AUTO_TEST_CASE(options_parse) {
  auto options = parse_sim_provider_args(
      {"--listen", "127.0.0.1:0", "--fail-rate", "0.1", "--timeout-rate", "0.2", "--permanent-rate",
       "0.05", "--latency-ms", "3", "--hold-ms", "100", "--dedupe-by-id", "--seed", "7"});
  BOOST_TEST(options.listen.port == 0);
  BOOST_TEST(options.faults.fail_rate == 0.1);
  BOOST_TEST(options.faults.timeout_rate == 0.2);
  BOOST_TEST(options.faults.permanent_rate == 0.05);
  BOOST_TEST(options.latency.count() == 3);
  BOOST_TEST(options.hold.count() == 100);
  BOOST_TEST(options.dedupe_by_id);
  BOOST_TEST(options.seed == 7u);
}

BOOST_AUTO_TEST_CASE(usage_errors) {
  auto error = [](args a) { return usage_message([&] { parse_sim_provider_args(a); }); };
  BOOST_TEST(mentions(error({}), "--listen"));
  BOOST_TEST(mentions(error({"--listen", "nowhere"}), "--listen"));
  BOOST_TEST(mentions(
      error({"--listen", "127.0.0.1:0", "--fail-rate", "0.6", "--timeout-rate", "0.6"}), "add up"));
  BOOST_TEST(mentions(error({"--listen", "127.0.0.1:0", "--latency-ms", "x"}), "--latency-ms"));
  BOOST_TEST(mentions(error({"--listen", "127.0.0.1:0", "--dedupe-by-id=1"}), "takes no value"));
  BOOST_TEST(mentions(error({"--listen", "127.0.0.1:0", "--what"}), "--what"));
}

BOOST_AUTO_TEST_CASE(a_provider_mode_serves_its_fake_with_its_own_credentials) {
  auto options = parse_sim_provider_args(
      {"--listen", "127.0.0.1:0", "--mode", "twilio", "--account", "AC1", "--secret", "tok"});
  BOOST_TEST((options.mode == sim_mode::twilio));
  BOOST_TEST(options.account == "AC1");
  BOOST_TEST(options.secret == "tok");
  BOOST_TEST((parse_sim_provider_args({"--listen", "127.0.0.1:0"}).mode == sim_mode::webhook));
  BOOST_TEST((parse_sim_provider_args({"--listen", "127.0.0.1:0", "--mode", "fcm"}).mode ==
              sim_mode::fcm));
  BOOST_TEST((parse_sim_provider_args({"--listen", "127.0.0.1:0", "--mode", "smtp"}).mode ==
              sim_mode::smtp));
  const auto apns = parse_sim_provider_args(
      {"--listen", "127.0.0.1:0", "--mode", "apns", "--topic", "com.example.shop"});
  BOOST_TEST((apns.mode == sim_mode::apns));
  BOOST_TEST(apns.topic == "com.example.shop");
  BOOST_TEST(mentions(usage_message([] {
                        parse_sim_provider_args({"--listen", "127.0.0.1:0", "--topic", "t"});
                      }),
                      "--mode apns"));
  auto error = [](args a) { return usage_message([&] { parse_sim_provider_args(a); }); };
  BOOST_TEST(mentions(error({"--listen", "127.0.0.1:0", "--mode", "pigeon"}), "--mode"));
  BOOST_TEST(mentions(error({"--listen", "127.0.0.1:0", "--mode", "wechat", "--fail-rate", "0.1"}),
                      "--mode webhook"));
  BOOST_TEST(
      mentions(error({"--listen", "127.0.0.1:0", "--secret", "x"}), "--mode wechat, twilio"));
}

BOOST_AUTO_TEST_CASE(receipt_options_parse) {
  auto options = parse_sim_provider_args({"--listen",
                                          "127.0.0.1:0",
                                          "--receipt-to",
                                          "http://127.0.0.1:8080/",
                                          "--receipt-secret",
                                          "whsec_c2VjcmV0",
                                          "--receipt-delay-ms",
                                          "25",
                                          "--reorder-ms",
                                          "40",
                                          "--drop-receipts",
                                          "0.1",
                                          "--duplicate-receipts",
                                          "0.2",
                                          "--undelivered-rate",
                                          "0.05",
                                          "--read-rate",
                                          "0.5",
                                          "--receipt-attempts",
                                          "3",
                                          "--receipt-concurrency",
                                          "2",
                                          "--receipt-queue",
                                          "10"});
  const auto& r = options.receipts;
  BOOST_REQUIRE(r.to.has_value());
  BOOST_TEST(r.to->server.host == "127.0.0.1");
  BOOST_TEST(r.to->server.port == 8080);
  BOOST_TEST(r.to->path_prefix == ""); // the trailing slash is dropped
  BOOST_TEST(r.secret == "whsec_c2VjcmV0");
  BOOST_TEST(r.delay.count() == 25);
  BOOST_TEST(r.reorder.count() == 40);
  BOOST_TEST(r.drop_rate == 0.1);
  BOOST_TEST(r.duplicate_rate == 0.2);
  BOOST_TEST(r.undelivered_rate == 0.05);
  BOOST_TEST(r.read_rate == 0.5);
  BOOST_TEST(r.attempts == 3u);
  BOOST_TEST(r.concurrency == 2u);
  BOOST_TEST(r.queue_limit == 10u);

  auto defaults = parse_sim_provider_args({"--listen", "127.0.0.1:0"}).receipts;
  BOOST_TEST(!defaults.to.has_value());
  BOOST_TEST(defaults.delay.count() == 100);
  BOOST_TEST(defaults.drop_rate == 0.0);
  BOOST_TEST(defaults.attempts == 8u);

  auto prefixed = parse_receipt_target("--receipt-to", "http://[::1]:9000/herald/");
  BOOST_TEST(prefixed.server.host == "::1");
  BOOST_TEST(prefixed.path_prefix == "/herald");
  BOOST_TEST(prefixed.to_string() == "http://[::1]:9000/herald");
}

BOOST_AUTO_TEST_CASE(receipt_usage_errors) {
  auto error = [](args a) {
    a.insert(a.begin(), {"--listen", "127.0.0.1:0"});
    return usage_message([&] { parse_sim_provider_args(a); });
  };
  BOOST_TEST(mentions(error({"--receipt-to", "http://127.0.0.1:8080"}), "--receipt-secret"));
  BOOST_TEST(mentions(error({"--receipt-secret", "whsec_c2VjcmV0"}), "needs --receipt-to"));
  BOOST_TEST(mentions(
      error({"--receipt-to", "http://10.0.0.1:8080", "--receipt-secret", "whsec_c2VjcmV0"}),
      "loopback"));
  BOOST_TEST(mentions(error({"--receipt-to", "https://127.0.0.1:8080"}), "http://"));
  BOOST_TEST(mentions(error({"--receipt-to", "http://127.0.0.1:8080/x?y=1"}), "--receipt-to"));
  BOOST_TEST(mentions(error({"--receipt-to", "http://127.0.0.1"}), "--receipt-to"));
  BOOST_TEST(mentions(
      error({"--receipt-to", "http://127.0.0.1:8080", "--receipt-secret", "secret"}), "whsec_"));
  BOOST_TEST(mentions(error({"--drop-receipts", "1.5"}), "--drop-receipts"));
  BOOST_TEST(mentions(error({"--receipt-attempts", "0"}), "--receipt-attempts"));
  BOOST_TEST(error({"--read-rate", "1", "--undelivered-rate", "0.2"}).empty());
}

BOOST_AUTO_TEST_CASE(fault_profile_slices_one_draw) {
  fault_profile faults{0.1, 0.2, 0.3};
  BOOST_CHECK(faults.choose(0.0) == call_outcome::retryable);
  BOOST_CHECK(faults.choose(0.099) == call_outcome::retryable);
  BOOST_CHECK(faults.choose(0.1) == call_outcome::timeout);
  BOOST_CHECK(faults.choose(0.299) == call_outcome::timeout);
  BOOST_CHECK(faults.choose(0.35) == call_outcome::permanent);
  BOOST_CHECK(faults.choose(0.65) == call_outcome::success);
  BOOST_CHECK(fault_profile{}.choose(0.0) == call_outcome::success);
}

BOOST_AUTO_TEST_SUITE_END()
