#pragma once

#include "tools/fake_exchange.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace herald::tools {

/// How the WeChat fake answers sends, in order, before it goes back to answering normally.
enum class wechat_fault {
  errcode,   ///< answer HTTP 200 with the given errcode
  truncated, ///< HTTP 200 with half a JSON body
  garbage,   ///< HTTP 200 with a body that is no JSON
  hang,      ///< no answer at all
  http_503,  ///< HTTP 503, no body
};

/// One message the fake accepted.
struct wechat_sent {
  std::string openid;
  std::string template_id;
  std::string client_msg_id;
  std::string msgid;
  std::string body; ///< the JSON as sent
};

/// A local stand-in for WeChat's Official Account API, following its documented wire format:
/// POST /cgi-bin/stable_token {"grant_type":"client_credential","appid","secret",
/// "force_refresh"} answers {"access_token","expires_in"}: the same token to every caller until
/// it expires or a refresh is forced (40013 for another appid, 40125 for a wrong secret);
/// POST /cgi-bin/message/template/send?access_token= answers {"errcode":0,"errmsg":"ok",
/// "msgid":N}, or 40001 for a token it never issued, 42001 for one it expired, 40037 for a
/// template it does not know, 43004 for an openid that does not follow, 47001 for a body it
/// cannot read. Like WeChat it sends one message per openid and client_msg_id (a repeat answers
/// the first msgid) — for ever, where WeChat keeps that promise for 10 minutes only.
/// Thread-safe: tests script it while a server thread answers.
class wechat_fake {
public:
  struct options {
    std::string appid = "wx-fake-app";
    std::string secret = "fake-app-secret";
    std::vector<std::string> templates = {"tpl-order-shipped"}; ///< empty: any template exists
    std::int64_t token_lifetime_s = 7200;
  };

  explicit wechat_fake(options o);

  fake_reply handle(const fake_request& request);

  /// Every token issued so far stops working (42001), as when WeChat expires one early.
  void expire_tokens();
  /// The next sends answer these faults, in order (an errcode fault takes `errcodes` in turn).
  void script(std::vector<wechat_fault> faults, std::vector<int> errcodes = {});
  /// While on, every send answers 45009 (the account's daily quota is used up).
  void set_quota_exhausted(bool on);
  /// Openids that no longer follow the account: 43004.
  void unfollow(const std::string& openid);

  std::size_t token_requests() const;
  std::size_t forced_refreshes() const;
  std::size_t send_requests() const;
  std::vector<wechat_sent> sent() const;

  /// The TEMPLATESENDJOBFINISH push WeChat would send for `msgid` ("success",
  /// "failed:user block", "failed: system failed"), and the signed query string for it; each
  /// push gets a nonce of its own unless one is given.
  struct push {
    std::string query; ///< signature=…&timestamp=…&nonce=…&openid=…
    std::string body;  ///< the XML
  };
  static push finish_push(const std::string& callback_token, const std::string& openid,
                          const std::string& msgid, const std::string& status,
                          std::int64_t unix_seconds, std::string nonce = {});

private:
  fake_reply stable_token(const std::string& body);
  fake_reply send(const std::string& query, const std::string& body);

  options options_;
  mutable std::mutex mutex_;
  std::set<std::string> live_tokens_;
  std::set<std::string> expired_tokens_;
  std::deque<wechat_fault> faults_;
  std::deque<int> errcodes_;
  bool quota_exhausted_ = false;
  std::set<std::string> unfollowed_;
  std::map<std::string, std::string> msgid_of_client_id_; ///< openid \n client_msg_id ->
  std::vector<wechat_sent> sent_;
  std::size_t token_requests_ = 0;
  std::size_t forced_refreshes_ = 0;
  std::size_t send_requests_ = 0;
  std::uint64_t next_msgid_ = 3662956322040938501ULL; ///< beyond a double's exact integers
};

} // namespace herald::tools
