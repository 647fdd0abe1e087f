#include "tools/wechat_fake.hpp"

#include "providers/twilio_protocol.hpp"
#include "providers/wechat_protocol.hpp"

#include <atomic>
#include <utility>

#include <boost/json.hpp>

namespace herald::tools {
namespace {

namespace json = boost::json;

std::string errcode_body(int errcode, std::string_view errmsg) {
  return json::serialize(json::object{{"errcode", errcode}, {"errmsg", errmsg}});
}

fake_reply errcode_reply(int errcode, std::string_view errmsg) {
  return {200, "application/json", errcode_body(errcode, errmsg), false, {}};
}

std::string query_of(const std::string& target) {
  const auto mark = target.find('?');
  return mark == std::string::npos ? std::string{} : target.substr(mark + 1);
}

std::string path_of(const std::string& target) {
  return target.substr(0, target.find('?'));
}

std::string param(const std::string& query, std::string_view name) {
  auto pairs = providers::form_decode(query);
  if (!pairs)
    return {};
  for (auto& [key, value] : *pairs)
    if (key == name)
      return value;
  return {};
}

} // namespace

wechat_fake::wechat_fake(options o) : options_(std::move(o)) {}

fake_reply wechat_fake::handle(const fake_request& request) {
  const auto path = path_of(request.target);
  const auto query = query_of(request.target);
  if (request.method == "POST" && path == "/cgi-bin/stable_token")
    return stable_token(request.body);
  if (request.method == "POST" && path == "/cgi-bin/message/template/send")
    return send(query, request.body);
  return {404, "application/json", errcode_body(40066, "invalid url"), false, {}};
}

fake_reply wechat_fake::stable_token(const std::string& body) {
  std::lock_guard<std::mutex> guard{mutex_};
  ++token_requests_;
  boost::system::error_code ec;
  auto parsed = json::parse(body, ec);
  if (ec || !parsed.is_object())
    return errcode_reply(47001, "data format error");
  const auto& request = parsed.as_object();
  auto text = [&](const char* key) {
    const auto* value = request.if_contains(key);
    return value != nullptr && value->is_string() ? std::string{value->as_string()} : std::string{};
  };
  if (text("grant_type") != "client_credential")
    return errcode_reply(40002, "invalid grant_type");
  if (text("appid") != options_.appid)
    return errcode_reply(40013, "invalid appid");
  if (text("secret") != options_.secret)
    return errcode_reply(40125, "invalid appsecret");
  const auto* force = request.if_contains("force_refresh");
  const bool forced = force != nullptr && force->is_bool() && force->as_bool();
  if (forced)
    ++forced_refreshes_;
  // As WeChat does, every caller gets the same token until it expires or a refresh is forced.
  if (forced || live_tokens_.empty()) {
    for (const auto& old : live_tokens_)
      expired_tokens_.insert(old);
    live_tokens_.clear();
    live_tokens_.insert("fake-token-" + std::to_string(token_requests_));
  }
  return {200,
          "application/json",
          json::serialize(json::object{{"access_token", *live_tokens_.begin()},
                                       {"expires_in", options_.token_lifetime_s}}),
          false,
          {}};
}

fake_reply wechat_fake::send(const std::string& query, const std::string& body) {
  std::lock_guard<std::mutex> guard{mutex_};
  ++send_requests_;
  const auto token = param(query, "access_token");
  if (token.empty())
    return errcode_reply(41001, "access_token missing");
  if (expired_tokens_.count(token) != 0)
    return errcode_reply(42001, "access_token expired");
  if (live_tokens_.count(token) == 0)
    return errcode_reply(40001, "invalid credential, access_token is invalid or not latest");
  if (!faults_.empty()) {
    const auto fault = faults_.front();
    faults_.pop_front();
    switch (fault) {
    case wechat_fault::errcode: {
      const int errcode = errcodes_.empty() ? -1 : errcodes_.front();
      if (!errcodes_.empty())
        errcodes_.pop_front();
      return errcode_reply(errcode, "scripted");
    }
    case wechat_fault::truncated:
      return {200, "application/json", R"({"errcode":0,"errmsg":"ok","msg)", false, {}};
    case wechat_fault::garbage:
      return {200, "text/html", "<html>bad gateway</html>", false, {}};
    case wechat_fault::hang:
      return {200, "application/json", {}, true, {}};
    case wechat_fault::http_503:
      return {503, "text/plain", {}, false, {}};
    }
  }
  if (quota_exhausted_)
    return errcode_reply(45009, "reach max api daily quota limit");
  boost::system::error_code ec;
  auto parsed = json::parse(body, ec);
  if (ec || !parsed.is_object())
    return errcode_reply(47001, "data format error");
  const auto& message = parsed.as_object();
  const auto* touser = message.if_contains("touser");
  const auto* template_id = message.if_contains("template_id");
  if (touser == nullptr || !touser->is_string() || template_id == nullptr ||
      !template_id->is_string())
    return errcode_reply(47001, "data format error");
  std::string openid{touser->as_string()};
  std::string tpl{template_id->as_string()};
  bool known_template = options_.templates.empty(); // none listed: any template exists
  for (const auto& t : options_.templates)
    known_template = known_template || t == tpl;
  if (!known_template)
    return errcode_reply(40037, "invalid template_id");
  if (openid.empty() || openid.find(' ') != std::string::npos)
    return errcode_reply(40003, "invalid openid");
  if (unfollowed_.count(openid) != 0)
    return errcode_reply(43004, "require subscribe");
  std::string client_msg_id;
  if (const auto* id = message.if_contains("client_msg_id"); id != nullptr && id->is_string())
    client_msg_id = std::string{id->as_string()};
  std::string msgid;
  const auto dedupe_key = openid + '\n' + client_msg_id;
  if (auto seen = msgid_of_client_id_.find(dedupe_key);
      !client_msg_id.empty() && seen != msgid_of_client_id_.end()) {
    msgid = seen->second; // one message per openid and client_msg_id
  } else {
    msgid = std::to_string(next_msgid_++);
    if (!client_msg_id.empty())
      msgid_of_client_id_[dedupe_key] = msgid;
    sent_.push_back({openid, tpl, client_msg_id, msgid, body});
  }
  // msgid is a JSON number in WeChat's answers, larger than a double holds exactly.
  return {
      200, "application/json", R"({"errcode":0,"errmsg":"ok","msgid":)" + msgid + "}", false, {}};
}

void wechat_fake::expire_tokens() {
  std::lock_guard<std::mutex> guard{mutex_};
  for (const auto& token : live_tokens_)
    expired_tokens_.insert(token);
  live_tokens_.clear();
}

void wechat_fake::script(std::vector<wechat_fault> faults, std::vector<int> errcodes) {
  std::lock_guard<std::mutex> guard{mutex_};
  faults_.insert(faults_.end(), faults.begin(), faults.end());
  errcodes_.insert(errcodes_.end(), errcodes.begin(), errcodes.end());
}

void wechat_fake::set_quota_exhausted(bool on) {
  std::lock_guard<std::mutex> guard{mutex_};
  quota_exhausted_ = on;
}

void wechat_fake::unfollow(const std::string& openid) {
  std::lock_guard<std::mutex> guard{mutex_};
  unfollowed_.insert(openid);
}

std::size_t wechat_fake::token_requests() const {
  return locked_copy(mutex_, token_requests_);
}

std::size_t wechat_fake::forced_refreshes() const {
  return locked_copy(mutex_, forced_refreshes_);
}

std::size_t wechat_fake::send_requests() const {
  return locked_copy(mutex_, send_requests_);
}

std::vector<wechat_sent> wechat_fake::sent() const {
  return locked_copy(mutex_, sent_);
}

wechat_fake::push wechat_fake::finish_push(const std::string& callback_token,
                                           const std::string& openid, const std::string& msgid,
                                           const std::string& status, std::int64_t unix_seconds,
                                           std::string nonce) {
  static std::atomic<std::uint64_t> pushes{0};
  if (nonce.empty())
    nonce = "fake-nonce-" + std::to_string(++pushes);
  const auto timestamp = std::to_string(unix_seconds);
  push out;
  out.query = providers::form_encode(
      {{"signature", providers::wechat_signature(callback_token, timestamp, nonce)},
       {"timestamp", timestamp},
       {"nonce", nonce},
       {"openid", openid}});
  out.body = "<xml><ToUserName><![CDATA[gh_fake_account]]></ToUserName>"
             "<FromUserName><![CDATA[" +
             openid + "]]></FromUserName><CreateTime>" + timestamp +
             "</CreateTime><MsgType><![CDATA[event]]></MsgType>"
             "<Event><![CDATA[TEMPLATESENDJOBFINISH]]></Event><MsgID>" +
             msgid + "</MsgID><Status><![CDATA[" + status + "]]></Status></xml>";
  return out;
}

} // namespace herald::tools
