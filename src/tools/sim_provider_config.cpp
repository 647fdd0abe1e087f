#include "tools/sim_provider_config.hpp"

#include "providers/webhook_signature.hpp"

namespace herald::tools {

call_outcome fault_profile::choose(double u) const {
  if (u < fail_rate)
    return call_outcome::retryable;
  if (u < fail_rate + timeout_rate)
    return call_outcome::timeout;
  if (u < fail_rate + timeout_rate + permanent_rate)
    return call_outcome::permanent;
  return call_outcome::success;
}

std::string receipt_target::to_string() const {
  return "http://" + server.to_string() + path_prefix;
}

receipt_target parse_receipt_target(std::string_view option, std::string_view text) {
  constexpr std::string_view scheme = "http://";
  const auto wants = std::string(option) + " wants http://HOST:PORT[/prefix] on a loopback " +
                     "address (herald's base URL), got '" + std::string(text) + "'";
  if (text.substr(0, scheme.size()) != scheme)
    throw usage_error(wants);
  auto rest = text.substr(scheme.size());
  auto slash = rest.find('/');
  receipt_target target;
  target.server = parse_host_port(option, rest.substr(0, slash));
  if (!is_loopback_host(target.server.host))
    throw usage_error(wants);
  if (slash != std::string_view::npos) {
    auto prefix = rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/')
      prefix.remove_suffix(1);
    if (prefix.find_first_of("?#") != std::string_view::npos)
      throw usage_error(wants);
    target.path_prefix = std::string(prefix);
  }
  return target;
}

sim_provider_options parse_sim_provider_args(const std::vector<std::string>& args) {
  sim_provider_options options;
  auto& faults = options.faults;
  auto& receipts = options.receipts;
  auto millis = [](const std::string& name, const std::string& v, std::uint64_t min,
                   std::uint64_t max) {
    return std::chrono::milliseconds(parse_count(name, v, min, max));
  };
  option_parser parser("sim-provider");
  parser
      .value("--listen", [&](const auto& name,
                             const auto& v) { options.listen = parse_host_port(name, v, true); })
      .value("--mode",
             [&](const auto& name, const auto& v) {
               if (v == "webhook")
                 options.mode = sim_mode::webhook;
               else if (v == "wechat")
                 options.mode = sim_mode::wechat;
               else if (v == "twilio")
                 options.mode = sim_mode::twilio;
               else if (v == "fcm")
                 options.mode = sim_mode::fcm;
               else if (v == "apns")
                 options.mode = sim_mode::apns;
               else if (v == "smtp")
                 options.mode = sim_mode::smtp;
               else
                 throw usage_error(name + " must be webhook, wechat, twilio, fcm, apns or smtp");
             })
      .value("--account", [&](const auto&, const auto& v) { options.account = v; })
      .value("--secret", [&](const auto&, const auto& v) { options.secret = v; })
      .value("--topic", [&](const auto&, const auto& v) { options.topic = v; })
      .value("--fail-rate",
             [&](const auto& name, const auto& v) { faults.fail_rate = parse_rate(name, v); })
      .value("--timeout-rate",
             [&](const auto& name, const auto& v) { faults.timeout_rate = parse_rate(name, v); })
      .value("--permanent-rate",
             [&](const auto& name, const auto& v) { faults.permanent_rate = parse_rate(name, v); })
      .value("--latency-ms",
             [&](const auto& name, const auto& v) {
               options.latency = std::chrono::milliseconds(parse_count(name, v, 0, 600'000));
             })
      .value("--status-latency-ms",
             [&](const auto& name, const auto& v) {
               options.status_latency = std::chrono::milliseconds(parse_count(name, v, 0, 600'000));
             })
      .value("--hold-ms",
             [&](const auto& name, const auto& v) {
               options.hold = std::chrono::milliseconds(parse_count(name, v, 1, 3'600'000));
             })
      .flag("--dedupe-by-id", options.dedupe_by_id)
      .value("--receipt-to",
             [&](const auto& name, const auto& v) { receipts.to = parse_receipt_target(name, v); })
      .value("--receipt-secret",
             [&](const auto& name, const auto& v) {
               if (!providers::decode_webhook_secret(v))
                 throw usage_error(name + " wants whsec_<base64> (the channel's receipt_secret)");
               receipts.secret = v;
             })
      .value(
          "--receipt-delay-ms",
          [&](const auto& name, const auto& v) { receipts.delay = millis(name, v, 0, 86'400'000); })
      .value("--reorder-ms",
             [&](const auto& name, const auto& v) {
               receipts.reorder = millis(name, v, 0, 86'400'000);
             })
      .value("--drop-receipts",
             [&](const auto& name, const auto& v) { receipts.drop_rate = parse_rate(name, v); })
      .value(
          "--duplicate-receipts",
          [&](const auto& name, const auto& v) { receipts.duplicate_rate = parse_rate(name, v); })
      .value(
          "--undelivered-rate",
          [&](const auto& name, const auto& v) { receipts.undelivered_rate = parse_rate(name, v); })
      .value("--read-rate",
             [&](const auto& name, const auto& v) { receipts.read_rate = parse_rate(name, v); })
      .value("--receipt-attempts",
             [&](const auto& name, const auto& v) {
               receipts.attempts = static_cast<unsigned>(parse_count(name, v, 1, 100));
             })
      .value("--receipt-concurrency",
             [&](const auto& name, const auto& v) {
               receipts.concurrency = static_cast<unsigned>(parse_count(name, v, 1, 64));
             })
      .value("--receipt-queue",
             [&](const auto& name, const auto& v) {
               receipts.queue_limit = parse_count(name, v, 1, 100'000'000);
             })
      .value("--seed", [&](const auto& name, const auto& v) {
        options.seed = parse_count(name, v, 0, UINT64_MAX);
      });
  parser.parse(args);
  options.help = parser.help();
  if (options.help)
    return options;
  if (!parser.seen("--listen"))
    throw usage_error("sim-provider needs --listen HOST:PORT");
  if (faults.fail_rate + faults.timeout_rate + faults.permanent_rate > 1.0 + 1e-9)
    throw usage_error("--fail-rate, --timeout-rate and --permanent-rate add up to more than 1");
  if (options.mode != sim_mode::webhook &&
      (receipts.to || faults.fail_rate + faults.timeout_rate + faults.permanent_rate > 0 ||
       options.dedupe_by_id))
    throw usage_error("--mode wechat, twilio, fcm, apns and smtp serve the provider's fake: "
                      "fault and receipt options belong to --mode webhook");
  if (options.mode == sim_mode::webhook && (!options.account.empty() || !options.secret.empty()))
    throw usage_error("--account and --secret belong to --mode wechat, twilio, fcm, apns and "
                      "smtp");
  if (options.mode != sim_mode::apns && !options.topic.empty())
    throw usage_error("--topic belongs to --mode apns");
  if (receipts.to && receipts.secret.empty())
    throw usage_error("--receipt-to needs --receipt-secret (receipts are signed)");
  if (!receipts.to && !receipts.secret.empty())
    throw usage_error("--receipt-secret needs --receipt-to");
  return options;
}

std::string sim_provider_usage() {
  return R"(herald sim-provider --listen HOST:PORT [options]
  A simulated provider: answers POST on any path (the path names the endpoint, e.g. /sms).
  --listen HOST:PORT     where to listen; port 0 picks a free one (printed on stdout)
  --mode M               webhook (default: herald's webhook contract, the options below),
                         wechat (WeChat's Official Account API: GET /cgi-bin/token, POST
                         /cgi-bin/message/template/send; point a wechat_template channel's
                         base_url here), twilio (the Messages API under /2010-04-01/;
                         point an sms_twilio channel's base_url here), fcm (FCM HTTP v1 and
                         a token endpoint at /token: a service account's token_uri and the
                         channel's base_url), apns (APNs over HTTP/2 with prior knowledge:
                         an apns channel with an http:// base_url) or smtp (an SMTP server)
  --account ID           wechat: the appid (default wx-fake-app); twilio: the Account SID
                         (default AC00000000000000000000000000000001); fcm: the service
                         account's client_email; apns: the team id; smtp: the AUTH user
                         (default: no AUTH)
  --secret S             wechat: the AppSecret (default fake-app-secret); twilio: the auth
                         token (default fake-auth-token); fcm: the private_key_id; apns: the
                         key id; smtp: the AUTH password
  --topic T              apns: the bundle id accepted in apns-topic (default org.herald.fake)
  --fail-rate F          share of calls answered 503, not processed (default 0)
  --timeout-rate F       share of calls processed but never answered (default 0)
  --permanent-rate F     share of calls answered 400, not processed (default 0)
  --latency-ms N         delay before every answer (default 0)
  --status-latency-ms N  delay before every status query's answer (default 0)
  --hold-ms N            how long an unanswered call is held before its connection is
                         dropped (default 30000)
  --dedupe-by-id         a repeated webhook-id that was delivered already is answered 200
                         with the first provider message id and not delivered again
  --seed N               seed of the fault and receipt draws (default 1)
  Every processed call is answered 200 {"message_id":"sim-..."} (one id per provider request
  id with --dedupe-by-id). What happened to each accepted message is decided at once:
  --undelivered-rate F   share reported undelivered instead of delivered (default 0)
  --read-rate F          share of delivered messages also read (default 0)
  Receipts (Standard Webhooks signed POSTs to {URL}/v1/receipts/{data.channel}):
  --receipt-to URL       herald's base URL, e.g. http://127.0.0.1:8080 (loopback only)
  --receipt-secret S     whsec_<base64>, the channel's receipt_secret (needed with
                         --receipt-to)
  --receipt-delay-ms N   from an accepted send to its receipt (default 100); a read receipt
                         follows N ms after the delivered one
  --reorder-ms N         each copy waits up to N ms more, at random, so copies and
                         statuses arrive out of order (default 0)
  --drop-receipts F      share of receipts never sent (default 0)
  --duplicate-receipts F share of receipts sent 2 or 3 times (default 0)
  --receipt-attempts N   POSTs of one receipt at most; 404, 408, 429, 5xx and connection
                         errors are retried with backoff (default 8)
  --receipt-concurrency N  sender threads, one connection each (default 16); herald answers
                         a receipt after its commit, so the senders keep up by numbers
  --receipt-queue N      receipts waiting at most; more are counted as overflow (default
                         1000000)
  Status queries: GET /status/{provider_request_id} -> 200 {"status":"accepted|delivered|
  read|undelivered"}, 404 for an id never accepted.
  Control: GET /stats (calls, receipts, requests), GET /calls/summary,
  GET /calls/ids[?endpoint=/sms], GET /calls/recent[?limit=N], POST /calls/reset,
  GET /healthz. Runs until SIGTERM or SIGINT.
)";
}

} // namespace herald::tools
