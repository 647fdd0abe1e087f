#pragma once

#include "domain/receipt.hpp"
#include "domain/time.hpp"
#include "providers/answer_class.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace herald::providers {

/// WeChat Official Account template messages, the wire format only (pure): the send body, what
/// WeChat's answer means, the access-token answer, the signature of WeChat's pushes and the
/// TEMPLATESENDJOBFINISH event. Sources (developers.weixin.qq.com, Official Account docs):
/// "发送模板消息" (POST cgi-bin/message/template/send), "全局返回码" (global return codes),
/// "获取 Access token", "接入指南" (server signature) and the template message event push.

/// One template message.
struct wechat_template_message {
  std::string openid; ///< the recipient, as this account knows them
  std::string template_id;
  /// The template's fields with their values, e.g. {{"thing1", "Order shipped"}}. Each template
  /// of WeChat's library fixes its own field names, so which field shows herald's title or body
  /// is the channel's configuration, not a rule of the protocol. A name given twice keeps its
  /// last value.
  name_values data;
  std::string url; ///< opened when the message is tapped; empty for none
  /// herald's provider request id. WeChat sends one message per openid and client_msg_id within
  /// 10 minutes, so a retry of an unanswered call does not send it twice; empty for none.
  std::string client_msg_id;
};

/// The JSON body of the send: {"touser", "template_id", "url"?, "client_msg_id"?,
/// "data": {"<field>": {"value": "<text>"}, …}}.
std::string template_send_body(const wechat_template_message& message);

/// Classes WeChat's answer to a send. WeChat answers a call it handled with HTTP 200 and
/// {"errcode": N, "errmsg": "…"} (with "msgid" when N is 0):
///   0                                    success; the message id is msgid, digits kept exactly
///   -1 (system busy)                     retryable
///   40001, 40014, 42001 (access token)   retryable + token_invalid
///   45009 (daily quota)                  throttled + quota_exhausted
///   45011 (per-minute quota)             throttled for a minute
///   45047 (one recipient's limit)        retryable: the channel need not pause for it
///   41001, 40013, 40125, 40164, 61004, 48001, 48004, 40036, 40037
///     (token missing, appid, secret, IP allow-list, API permission, template id)
///                                        permanent + config_error
///   43004, 40003, 47001 and every other code
///                                        permanent: WeChat refused this message. A code herald
///                                        does not know is shown to an operator, not retried
///                                        blindly.
///   2xx without a readable errcode       timeout: the body was cut or garbled after WeChat
///                                        took the call, so it may have sent the message
///   any other HTTP status                classify_http (failure_class.hpp)
/// A failure's detail is "wechat errcode N: <errmsg>", masked. `retry_after` is kept for
/// retryable and throttled answers.
classified_answer classify_wechat_answer(long http_status, std::string_view body,
                                         std::optional<std::chrono::milliseconds> retry_after);

/// What GET cgi-bin/token answered: {"access_token", "expires_in"}, or an error
/// ({"errcode": N, "errmsg"}: "wechat errcode N: …").
token_answer parse_token_answer(std::string_view body);

/// The signature WeChat puts on its pushes to the server URL: lower-case hex SHA-1 of the
/// token, timestamp and nonce sorted (byte order) and concatenated.
std::string wechat_signature(std::string_view token, std::string_view timestamp,
                             std::string_view nonce);

/// Whether `signature` is the signature of this push, compared in constant time. The caller
/// decides how old a timestamp it accepts.
bool verify_wechat_signature(std::string_view token, std::string_view timestamp,
                             std::string_view nonce, std::string_view signature);

/// Longest push body read; WeChat's events are a few hundred bytes.
inline constexpr std::size_t max_push_bytes = 16 * 1024;

/// The leaf elements under the root of a flat XML document, in document order:
/// "<xml><A><![CDATA[x]]></A><B>1 &amp; 2</B></xml>" -> {{"A", "x"}, {"B", "1 & 2"}}. Text is
/// CDATA sections and character data with the five predefined entities (&lt; &gt; &amp; &quot;
/// &apos;) decoded; values are not trimmed. Elements with children of their own are skipped
/// (up to 8 levels deep), so events that carry lists still show their flat fields. nullopt for
/// anything else: more than max_push_bytes, a declaration (<!DOCTYPE, <!ENTITY: nothing is
/// expanded), a comment, a processing instruction other than a leading <?xml …?>, attributes,
/// any other entity or character reference, mismatched or unclosed tags, text beside the root's
/// elements, a leaf name given twice. Never throws.
std::optional<name_values> read_flat_xml(std::string_view xml);

/// What a push to the server URL says about a template message.
struct wechat_event {
  enum class kind {
    receipt,   ///< TEMPLATESENDJOBFINISH: `status` is the receipt
    ignored,   ///< another message or event WeChat pushes to the same URL: answer "success"
    malformed, ///< not a push herald can read; `detail` says why
  };
  kind result = kind::malformed;
  domain::receipt_status status = domain::receipt_status::delivered; ///< with receipt
  std::string message_id;        ///< with receipt: MsgID, the msgid of the send
  std::string openid;            ///< with receipt: FromUserName, the recipient
  domain::timestamp occurred_at; ///< with receipt: CreateTime
  /// Undelivered: why ("user block", "system failed"); ignored: which message or event;
  /// malformed: what is wrong. Masked, never the openid.
  std::string detail;
};

/// Reads a push. For TEMPLATESENDJOBFINISH, Status "success" is delivered and "failed:<why>"
/// undelivered with <why> as the detail ("failed:user block" -> "user block", "failed: system
/// failed" -> "system failed"); MsgID, FromUserName and CreateTime are required. MsgType other
/// than "event", or another Event, is ignored.
wechat_event parse_template_event(std::string_view xml);

} // namespace herald::providers
