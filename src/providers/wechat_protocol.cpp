#include "providers/wechat_protocol.hpp"

#include "domain/api_key.hpp"
#include "domain/masking.hpp"
#include "providers/failure_class.hpp"
#include "providers/webhook_signature.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include <boost/json.hpp>
#include <openssl/sha.h>

namespace herald::providers {
namespace {

namespace json = boost::json;
using namespace error_classes;

// The return codes that are not a plain refusal of this message (global return codes,
// "全局返回码"); every other code but 0 is `refused`.
constexpr std::array<std::pair<std::int64_t, error_class>, 16> wechat_errors{{
    {-1, try_again},        // system busy, try again later
    {40001, token_refused}, // invalid credential: access_token invalid or not the latest
    {40014, token_refused}, // invalid access_token
    {42001, token_refused}, // access_token expired
    {45009, quota_used_up}, // reach max api daily quota limit
    {45011, slow_down},     // api minute-quota reach limit, retry next minute
    {45047, try_again},     // out of response count limit: one recipient's, not the channel's
    {41001, misconfigured}, // access_token missing
    {40013, misconfigured}, // invalid appid
    {40125, misconfigured}, // invalid appsecret
    {40164, misconfigured}, // caller's IP is not in the account's allow-list
    {61004, misconfigured}, // client IP not registered
    {48001, misconfigured}, // api unauthorized: the account may not send template messages
    {48004, misconfigured}, // api forbidden for irregularities
    {40036, misconfigured}, // invalid template_id size
    {40037, misconfigured}, // invalid template_id
}};

/// msgid as text. WeChat's ids reach 19 digits: Boost.JSON keeps every integer up to 2^64
/// exactly; a double (beyond that) has lost digits already and names nothing.
std::string msgid_of(const json::object& answer) {
  const auto* id = answer.if_contains("msgid");
  if (id == nullptr)
    return {};
  if (id->is_int64())
    return std::to_string(id->get_int64());
  if (id->is_uint64())
    return std::to_string(id->get_uint64());
  if (id->is_string())
    return std::string{id->get_string()};
  return {};
}

std::string errcode_detail(std::int64_t errcode, const json::object& answer) {
  return failure_detail("wechat errcode " + std::to_string(errcode),
                        string_field(answer, "errmsg"));
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

bool is_name_start(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':';
}

bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

bool all_digits(std::string_view text, std::size_t max_digits) {
  return !text.empty() && text.size() <= max_digits &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && is_space(text.front()))
    text.remove_prefix(1);
  while (!text.empty() && is_space(text.back()))
    text.remove_suffix(1);
  return text;
}

/// WeChat nests nothing in its template events; lists in other events go a level or two deep.
constexpr int max_xml_depth = 8;

/// A cursor over an XML text; each reader consumes what it accepts and nothing otherwise.
class xml_cursor {
public:
  explicit xml_cursor(std::string_view text) : rest_(text) {}

  bool at_end() const { return rest_.empty(); }

  void skip_space() {
    while (!rest_.empty() && is_space(rest_.front()))
      rest_.remove_prefix(1);
  }

  bool take(std::string_view literal) {
    if (rest_.substr(0, literal.size()) != literal)
      return false;
    rest_.remove_prefix(literal.size());
    return true;
  }

  /// Everything before `end`, consuming `end` too; nullopt when `end` never comes.
  std::optional<std::string_view> take_until(std::string_view end) {
    const auto at = rest_.find(end);
    if (at == std::string_view::npos)
      return std::nullopt;
    const auto before = rest_.substr(0, at);
    rest_.remove_prefix(at + end.size());
    return before;
  }

  /// An XML name; empty when none starts here.
  std::string_view take_name() {
    if (rest_.empty() || !is_name_start(rest_.front()))
      return {};
    std::size_t size = 1;
    while (size < rest_.size() && is_name_char(rest_[size]))
      ++size;
    const auto name = rest_.substr(0, size);
    rest_.remove_prefix(size);
    return name;
  }

  /// The character one of the five predefined entities stands for, after its '&'.
  std::optional<char> take_entity() {
    static constexpr std::array<std::pair<std::string_view, char>, 5> entities{{
        {"lt;", '<'},
        {"gt;", '>'},
        {"amp;", '&'},
        {"quot;", '"'},
        {"apos;", '\''},
    }};
    for (const auto& [text, decoded] : entities)
      if (take(text))
        return decoded;
    return std::nullopt;
  }

  std::optional<char> take_char() {
    if (rest_.empty())
      return std::nullopt;
    const char c = rest_.front();
    rest_.remove_prefix(1);
    return c;
  }

private:
  std::string_view rest_;
};

struct xml_element {
  std::string name;
  std::string text; ///< its character data and CDATA, decoded
  bool has_children = false;
  name_values leaves; ///< its children that have no children of their own
};

/// One element, its '<' already taken: the start tag (no attributes), the content and the
/// matching end tag.
std::optional<xml_element> read_element(xml_cursor& in, int depth) {
  if (depth > max_xml_depth)
    return std::nullopt;
  xml_element element;
  element.name = in.take_name(); // "<!" and "<?" have no name: declarations are never read
  if (element.name.empty())
    return std::nullopt;
  in.skip_space();
  if (in.take("/>"))
    return element;
  if (!in.take(">"))
    return std::nullopt;
  for (;;) {
    if (in.take("</")) {
      if (in.take_name() != element.name)
        return std::nullopt;
      in.skip_space();
      return in.take(">") ? std::optional{std::move(element)} : std::nullopt;
    }
    if (in.take("<![CDATA[")) {
      const auto data = in.take_until("]]>");
      if (!data)
        return std::nullopt;
      element.text.append(*data);
    } else if (in.take("<")) {
      auto child = read_element(in, depth + 1);
      if (!child)
        return std::nullopt;
      element.has_children = true;
      if (!child->has_children)
        element.leaves.emplace_back(std::move(child->name), std::move(child->text));
    } else {
      const auto c = in.take("&") ? in.take_entity() : in.take_char();
      if (!c)
        return std::nullopt; // an unknown reference, or the end inside the element
      element.text.push_back(*c);
    }
  }
}

wechat_event malformed(std::string why) {
  wechat_event event;
  event.detail = std::move(why);
  return event;
}

wechat_event ignored(std::string_view what, std::string_view name) {
  wechat_event event;
  event.result = wechat_event::kind::ignored;
  event.detail = failure_detail(what, name);
  return event;
}

} // namespace

std::string template_send_body(const wechat_template_message& message) {
  json::object data;
  for (const auto& [field, value] : message.data)
    data[field] = json::object{{"value", value}};
  json::object body;
  body["touser"] = message.openid;
  body["template_id"] = message.template_id;
  if (!message.url.empty())
    body["url"] = message.url;
  if (!message.client_msg_id.empty())
    body["client_msg_id"] = message.client_msg_id;
  body["data"] = std::move(data);
  return json::serialize(body);
}

classified_answer classify_wechat_answer(long http_status, std::string_view body,
                                         std::optional<std::chrono::milliseconds> retry_after) {
  if (http_status < 200 || http_status > 299)
    return {classify_unread_answer(http_status, retry_after, body)};
  const auto answer = parse_answer_object(body);
  const auto errcode = answer ? integer_field(*answer, "errcode") : std::nullopt;
  if (!errcode)
    return {{call_outcome::timeout, "wechat answer unreadable, outcome unknown", std::nullopt}};
  if (*errcode == 0)
    return {confirmed(msgid_of(*answer))};
  const auto* how = find_error_class(wechat_errors, *errcode);
  // 45011 says "retry next minute": a pause of a minute, not the channel's short default.
  if (*errcode == 45011 && !retry_after)
    retry_after = std::chrono::minutes{1};
  return classify_as(how != nullptr ? *how : refused, errcode_detail(*errcode, *answer),
                     retry_after);
}

token_answer parse_token_answer(std::string_view body) {
  const auto answer = parse_answer_object(body);
  if (!answer)
    return {{}, {}, "wechat token answer unreadable"};
  if (const auto errcode = integer_field(*answer, "errcode"); errcode && *errcode != 0)
    return {{}, {}, errcode_detail(*errcode, *answer)};
  return read_access_token(*answer);
}

std::string wechat_signature(std::string_view token, std::string_view timestamp,
                             std::string_view nonce) {
  std::array<std::string_view, 3> parts{token, timestamp, nonce};
  std::sort(parts.begin(), parts.end());
  std::string content;
  content.reserve(token.size() + timestamp.size() + nonce.size());
  for (const auto part : parts)
    content.append(part);
  std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
  SHA1(reinterpret_cast<const unsigned char*>(content.data()), content.size(), digest.data());
  return domain::to_hex({reinterpret_cast<const char*>(digest.data()), digest.size()});
}

bool verify_wechat_signature(std::string_view token, std::string_view timestamp,
                             std::string_view nonce, std::string_view signature) {
  return same_signature(wechat_signature(token, timestamp, nonce), signature);
}

std::optional<name_values> read_flat_xml(std::string_view xml) {
  if (xml.size() > max_push_bytes)
    return std::nullopt;
  xml_cursor in{xml};
  in.take("\xEF\xBB\xBF"); // a UTF-8 byte order mark
  in.skip_space();
  if (in.take("<?xml") && !in.take_until("?>"))
    return std::nullopt;
  in.skip_space();
  if (!in.take("<"))
    return std::nullopt;
  auto root = read_element(in, 0);
  in.skip_space();
  if (!root || !in.at_end() || !trim(root->text).empty())
    return std::nullopt;
  for (auto leaf = root->leaves.begin(); leaf != root->leaves.end(); ++leaf)
    if (std::any_of(root->leaves.begin(), leaf,
                    [&](const auto& earlier) { return earlier.first == leaf->first; }))
      return std::nullopt; // which of the two would count is anyone's guess
  return std::move(root->leaves);
}

wechat_event parse_template_event(std::string_view xml) {
  const auto fields = read_flat_xml(xml);
  if (!fields)
    return malformed("push is not flat XML");
  const auto field = [&](std::string_view name) {
    for (const auto& [key, value] : *fields)
      if (key == name)
        return trim(value);
    return std::string_view{};
  };
  if (field("MsgType").empty())
    return malformed("push without a MsgType");
  if (field("MsgType") != "event")
    return ignored("ignored message", field("MsgType"));
  if (field("Event") != "TEMPLATESENDJOBFINISH")
    return ignored("ignored event", field("Event"));

  wechat_event event;
  event.message_id = field("MsgID");
  event.openid = field("FromUserName");
  const auto created = field("CreateTime");
  const auto status = field("Status");
  if (!all_digits(event.message_id, 20))
    return malformed("TEMPLATESENDJOBFINISH without a numeric MsgID");
  if (!domain::is_plausible_provider_id(event.openid))
    return malformed("TEMPLATESENDJOBFINISH without a FromUserName");
  const auto occurred_at =
      all_digits(created, 10) ? unix_instant(std::chrono::seconds{std::stoll(std::string{created})})
                              : std::nullopt;
  if (!occurred_at)
    return malformed("TEMPLATESENDJOBFINISH without a CreateTime");
  event.occurred_at = *occurred_at;

  constexpr std::string_view failed = "failed";
  if (status == "success") {
    event.status = domain::receipt_status::delivered;
  } else if (status.substr(0, failed.size()) == failed) {
    // "failed:user block", "failed: system failed": the reason follows the colon.
    auto why = status.substr(failed.size());
    if (!why.empty() && why.front() == ':')
      why.remove_prefix(1);
    why = trim(why);
    event.status = domain::receipt_status::undelivered;
    event.detail = domain::mask_free_text(why.empty() ? failed : why, max_body_excerpt);
  } else {
    return malformed(failure_detail("TEMPLATESENDJOBFINISH with an unknown Status", status));
  }
  event.result = wechat_event::kind::receipt;
  return event;
}

} // namespace herald::providers
