#include "api/json_codec.hpp"

#include "domain/masking.hpp"
#include "domain/receipt.hpp"
#include "domain/task_state.hpp"
#include "domain/time.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

namespace herald::api {
namespace json = boost::json;

namespace {

domain::validation_error invalid(std::string message, std::string field = {}) {
  return domain::validation_error{400, "invalid_request", std::move(message), std::move(field)};
}

std::string_view kind_name(const json::value& value) {
  switch (value.kind()) {
  case json::kind::null:
    return "null";
  case json::kind::bool_:
    return "a boolean";
  case json::kind::int64:
  case json::kind::uint64:
  case json::kind::double_:
    return "a number";
  case json::kind::string:
    return "a string";
  case json::kind::array:
    return "an array";
  case json::kind::object:
    return "an object";
  }
  return "unknown";
}

domain::validation_error wrong_type(const std::string& field, std::string_view expected,
                                    const json::value& got) {
  return invalid(
      field + " must be " + std::string(expected) + ", not " + std::string(kind_name(got)), field);
}

/// A number as text in its shortest round-trip form: 20260907 -> "20260907", 1.5 -> "1.5".
std::string number_text(const json::value& value) {
  if (value.is_int64())
    return std::to_string(value.get_int64());
  if (value.is_uint64())
    return std::to_string(value.get_uint64());
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value.get_double());
  if (result.ec != std::errc{})
    return json::serialize(value);
  return std::string(buffer, result.ptr);
}

using decode_error = std::optional<domain::validation_error>;

decode_error read_string(const json::value& value, const std::string& field, std::string& out) {
  if (!value.is_string())
    return wrong_type(field, "a string", value);
  out.assign(value.get_string().data(), value.get_string().size());
  return std::nullopt;
}

decode_error read_channels(const json::value& value, std::vector<std::string>& out) {
  if (!value.is_array())
    return wrong_type("channels", "an array of strings", value);
  const auto& array = value.get_array();
  out.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    if (!array[i].is_string())
      return invalid("channels[" + std::to_string(i) + "] must be a string, not " +
                         std::string(kind_name(array[i])),
                     "channels");
    out.emplace_back(array[i].get_string().data(), array[i].get_string().size());
  }
  return std::nullopt;
}

decode_error read_recipients(const json::value& value, std::map<std::string, std::string>& out) {
  if (!value.is_object())
    return wrong_type("to", "an object of channel to recipient", value);
  for (const auto& entry : value.get_object()) {
    std::string channel(entry.key());
    if (auto error = read_string(entry.value(), "to." + channel, out[channel]))
      return error;
  }
  return std::nullopt;
}

} // namespace

std::optional<domain::validation_error> decode_params(const boost::json::value& value,
                                                      std::map<std::string, std::string>& out) {
  if (!value.is_object())
    return wrong_type("params", "an object", value);
  for (const auto& entry : value.get_object()) {
    std::string name(entry.key());
    const auto& param = entry.value();
    switch (param.kind()) {
    case json::kind::string:
      out[name].assign(param.get_string().data(), param.get_string().size());
      break;
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_:
      out[name] = number_text(param);
      break;
    case json::kind::bool_:
      out[name] = param.get_bool() ? "true" : "false";
      break;
    default:
      return invalid("params." + name + " must be a string, number or boolean, not " +
                         std::string(kind_name(param)),
                     "params." + name);
    }
  }
  return std::nullopt;
}

namespace {

decode_error read_content(const json::value& value, std::optional<domain::content>& out) {
  if (!value.is_object())
    return wrong_type("content", "an object", value);
  domain::content content;
  bool has_body = false;
  for (const auto& entry : value.get_object()) {
    if (entry.key() == "title") {
      if (auto error = read_string(entry.value(), "content.title", content.title))
        return error;
    } else if (entry.key() == "body") {
      if (auto error = read_string(entry.value(), "content.body", content.body))
        return error;
      has_body = true;
    } else {
      std::string field = "content." + std::string(entry.key());
      return invalid("unknown field " + field, field);
    }
  }
  if (!has_body)
    return invalid("content.body is required", "content.body");
  out = std::move(content);
  return std::nullopt;
}

decode_error read_time(const json::value& value, const std::string& field,
                       std::optional<domain::timestamp>& out) {
  if (!value.is_string())
    return wrong_type(field, "an RFC 3339 timestamp string", value);
  const auto& text = value.get_string();
  auto parsed = domain::parse_rfc3339(std::string_view(text.data(), text.size()));
  if (!parsed)
    return invalid(field + " must be an RFC 3339 timestamp, e.g. 2026-12-02T10:00:00Z", field);
  out = *parsed;
  return std::nullopt;
}

template <typename T, typename Parse>
decode_error read_enum(const json::value& value, const std::string& field, Parse parse,
                       std::string_view allowed, T& out) {
  if (!value.is_string())
    return wrong_type(field, "a string", value);
  const auto& text = value.get_string();
  auto parsed = parse(std::string_view(text.data(), text.size()));
  if (!parsed)
    return invalid(field + " must be one of " + std::string(allowed), field);
  out = *parsed;
  return std::nullopt;
}

decode_error read_field(std::string_view key, const json::value& value,
                        domain::message_request& request) {
  // Optional fields accept null as "not given"; required strings do not.
  if (key == "biz_type")
    return read_string(value, "biz_type", request.biz_type);
  if (key == "biz_id")
    return read_string(value, "biz_id", request.biz_id);
  if (key == "user_id")
    return read_string(value, "user_id", request.user_id);
  if (key == "tenant") {
    request.tenant_named = !value.is_null();
    return value.is_null() ? std::nullopt : read_string(value, "tenant", request.tenant);
  }
  if (value.is_null() &&
      (key == "channels" || key == "to" || key == "template" || key == "params" ||
       key == "content" || key == "category" || key == "priority" || key == "send_at" ||
       key == "expire_at" || key == "locale"))
    return std::nullopt;
  if (key == "channels")
    return read_channels(value, request.channels);
  if (key == "to")
    return read_recipients(value, request.to);
  if (key == "template")
    return read_string(value, "template", request.template_name);
  if (key == "locale")
    return read_string(value, "locale", request.locale);
  if (key == "params")
    return decode_params(value, request.params);
  if (key == "content")
    return read_content(value, request.body);
  if (key == "category")
    return read_enum(
        value, "category", [](std::string_view t) { return domain::parse_category(t); },
        "verification, transactional, marketing, system", request.category);
  if (key == "priority")
    return read_enum(
        value, "priority", [](std::string_view t) { return domain::parse_priority(t); },
        "high, normal, low", request.priority);
  if (key == "send_at")
    return read_time(value, "send_at", request.send_at);
  if (key == "expire_at")
    return read_time(value, "expire_at", request.expire_at);
  std::string field(key);
  return invalid("unknown field " + field, field);
}

json::string_view sv(std::string_view text) {
  return json::string_view(text.data(), text.size());
}

/// A second pass over a body that parsed, for what json::parse hides: of duplicate keys it keeps
/// the last, while a proxy in front may act on the first; and a number beyond the range of a
/// double becomes an infinity. The first such problem is kept, naming its field.
class strict_json_checker {
public:
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  /// Every problem found, in document order; the first one stops the parse unless
  /// `keep_going` (a batch wants each item's own problem).
  std::vector<domain::validation_error> problems;
  bool keep_going = false;

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_object_begin(json::error_code&) { return open(true); }
  bool on_object_end(std::size_t, json::error_code&) { return close(); }
  bool on_array_begin(json::error_code&) { return open(false); }
  bool on_array_end(std::size_t, json::error_code&) { return close(); }
  bool on_key_part(json::string_view part, std::size_t, json::error_code&) {
    key_.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view part, std::size_t, json::error_code& ec) {
    key_.append(part.data(), part.size());
    frame& object = frames_.back();
    object.key = std::move(key_);
    key_.clear();
    if (!object.keys.insert(object.key).second) {
      const std::string field = path();
      return fail(ec, {400, "duplicate_key", "duplicate key " + field, field});
    }
    return true;
  }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) { return value_done(); }
  bool on_number_part(json::string_view, json::error_code&) { return true; }
  bool on_int64(std::int64_t, json::string_view, json::error_code&) { return value_done(); }
  bool on_uint64(std::uint64_t, json::string_view, json::error_code&) { return value_done(); }
  bool on_double(double number, json::string_view, json::error_code& ec) {
    if (!std::isfinite(number)) {
      const std::string field = path();
      return fail(ec, invalid(field + " is a number out of range", field));
    }
    return value_done();
  }
  bool on_bool(bool, json::error_code&) { return value_done(); }
  bool on_null(json::error_code&) { return value_done(); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

private:
  struct frame {
    bool is_object = false;
    std::unordered_set<std::string> keys; // objects: every key seen so far
    std::string key;                      // objects: the key of the current value
    std::size_t index = 0;                // arrays: the index of the current value
  };

  bool open(bool is_object) {
    frames_.push_back(frame{is_object, {}, {}, 0});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return value_done();
  }

  bool value_done() {
    if (!frames_.empty() && !frames_.back().is_object)
      ++frames_.back().index;
    return true;
  }

  bool fail(json::error_code& ec, domain::validation_error error) {
    problems.push_back(std::move(error));
    if (keep_going)
      return true;
    ec = json::error::exception; // any error stops the parser; `problems` says which
    return false;
  }

  /// The current value's field in the notation of the other errors: "params.x", "channels[0]".
  std::string path() const {
    std::string out;
    for (const frame& level : frames_) {
      if (!level.is_object) {
        out += "[" + std::to_string(level.index) + "]";
        continue;
      }
      if (!out.empty())
        out += '.';
      out += level.key;
    }
    return out;
  }

  std::vector<frame> frames_;
  std::string key_; // a key arriving in parts
};

} // namespace

namespace {

std::vector<domain::validation_error>
strict_json_problems(std::string_view body, const json::parse_options& options, bool keep_going) {
  json::basic_parser<strict_json_checker> parser(options);
  parser.handler().keep_going = keep_going;
  json::error_code ec;
  parser.write_some(false, body.data(), body.size(), ec);
  return std::move(parser.handler().problems);
}

} // namespace

std::optional<domain::validation_error> check_strict_json(std::string_view body,
                                                          const json::parse_options& options) {
  auto problems = strict_json_problems(body, options, false);
  if (problems.empty())
    return std::nullopt;
  return std::move(problems.front());
}

namespace {

json::parse_options request_parse_options(unsigned max_depth) {
  json::parse_options options;
  options.max_depth = max_depth;
  options.allow_comments = false;
  options.allow_trailing_commas = false;
  options.allow_invalid_utf8 = false;
  return options;
}

/// A request body parsed (not yet checked strictly) into a JSON value, or why not. Allocates
/// from `memory`, which must outlive the value.
std::variant<json::value, domain::validation_error>
parse_request_body(std::string_view body, const json::parse_options& options,
                   json::monotonic_resource& memory) {
  json::error_code ec;
  json::value document = json::parse(sv(body), ec, &memory, options);
  if (ec == json::error::too_deep)
    return invalid("JSON nested too deep (more than " + std::to_string(options.max_depth) +
                   " levels)");
  if (ec)
    return invalid("malformed JSON: " + ec.message());
  return document;
}

domain::validation_error not_an_object(const json::value& document) {
  return invalid(std::string("the request body must be a JSON object, not ") +
                 std::string(kind_name(document)));
}

/// A request body parsed strictly (see check_strict_json) into a JSON object, or why not.
/// Allocates from `memory`, which must outlive the value.
std::variant<json::value, domain::validation_error>
parse_request_object(std::string_view body, unsigned max_depth, json::monotonic_resource& memory) {
  const auto options = request_parse_options(max_depth);
  auto parsed = parse_request_body(body, options, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return *failure;
  if (auto problem = check_strict_json(body, options))
    return *problem;
  if (!std::get<json::value>(parsed).is_object())
    return not_an_object(std::get<json::value>(parsed));
  return parsed;
}

/// One event object, as POST /v1/messages takes it (fields named from the event's top).
std::variant<domain::message_request, domain::validation_error>
decode_message_object(const json::object& object) {
  domain::message_request request;
  for (const auto& entry : object) {
    if (auto error = read_field(std::string_view(entry.key().data(), entry.key().size()),
                                entry.value(), request))
      return *error;
  }
  for (const char* required : {"biz_type", "biz_id", "user_id"}) {
    if (!object.contains(required))
      return invalid(std::string(required) + " is required", required);
  }
  return request;
}

constexpr std::string_view batch_items_key = "messages";

/// The item a field of a batch body lies in ("messages[3].biz_id" -> 3); none when outside
/// every item.
std::optional<std::size_t> batch_item_of(std::string_view field) {
  const auto prefix = std::string(batch_items_key) + "[";
  if (field.substr(0, prefix.size()) != prefix)
    return std::nullopt;
  field.remove_prefix(prefix.size());
  std::size_t index = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), index);
  if (ec != std::errc{} || end == field.data() + field.size() || *end != ']')
    return std::nullopt;
  return index;
}

} // namespace

std::variant<domain::message_request, domain::validation_error>
decode_message_request(std::string_view body, unsigned max_depth) {
  json::monotonic_resource memory;
  auto parsed = parse_request_object(body, max_depth, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return *failure;
  return decode_message_object(std::get<json::value>(parsed).get_object());
}

domain::validation_error batch_item_error(std::size_t index, domain::validation_error error) {
  auto item = std::string(batch_items_key) + "[" + std::to_string(index) + "]";
  error.field = error.field.empty() ? item : item + "." + error.field;
  return error;
}

std::variant<std::vector<batch_item>, domain::validation_error>
decode_batch_request(std::string_view body, unsigned max_depth) {
  json::monotonic_resource memory;
  // The body's object and its array hold the items: each item may nest as deep as a single
  // POST's body.
  const auto options = request_parse_options(max_depth + 2);
  auto parsed = parse_request_body(body, options, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return *failure;
  // What json::parse lets pass (duplicate keys, numbers out of range) refuses the item it lies
  // in, or the whole request when it lies outside every item.
  std::map<std::size_t, domain::validation_error> item_problems;
  for (auto& problem : strict_json_problems(body, options, true)) {
    auto index = batch_item_of(problem.field);
    if (!index)
      return problem;
    item_problems.emplace(*index, std::move(problem)); // the item's first problem is kept
  }
  const auto& document = std::get<json::value>(parsed);
  if (!document.is_object())
    return not_an_object(document);
  const auto& object = document.get_object();
  for (const auto& entry : object)
    if (entry.key() != sv(batch_items_key)) {
      std::string field(entry.key());
      return invalid("unknown field " + field, field);
    }
  const std::string items_field(batch_items_key);
  const auto* messages = object.if_contains(sv(batch_items_key));
  if (messages == nullptr)
    return invalid(items_field + " is required", items_field);
  if (!messages->is_array())
    return wrong_type(items_field, "an array of message objects", *messages);
  const auto& array = messages->get_array();
  if (array.empty() || array.size() > max_batch_items)
    return invalid(items_field + " must hold 1 to " + std::to_string(max_batch_items) +
                       " messages, not " + std::to_string(array.size()),
                   items_field);
  std::vector<batch_item> items;
  items.reserve(array.size());
  for (std::size_t i = 0; i < array.size(); ++i) {
    if (auto problem = item_problems.find(i); problem != item_problems.end()) {
      items.emplace_back(std::move(problem->second));
    } else if (!array[i].is_object()) {
      items.emplace_back(batch_item_error(i, invalid("each message must be a JSON object, not " +
                                                     std::string(kind_name(array[i])))));
    } else {
      auto decoded = decode_message_object(array[i].get_object());
      if (auto* failure = std::get_if<domain::validation_error>(&decoded))
        items.emplace_back(batch_item_error(i, std::move(*failure)));
      else
        items.emplace_back(std::move(std::get<domain::message_request>(decoded)));
    }
  }
  return items;
}

std::variant<receipt_callback_body, domain::validation_error> decode_receipt(std::string_view body,
                                                                             unsigned max_depth) {
  json::monotonic_resource memory;
  auto parsed = parse_request_object(body, max_depth, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return *failure;
  const auto& document = std::get<json::value>(parsed).get_object();
  receipt_callback_body receipt;
  for (const auto& [key, value] : document) {
    if (key == "type") {
      if (!value.is_string() || value.get_string() != "herald.receipt")
        return invalid("type must be \"herald.receipt\"", "type");
    } else if (key == "timestamp") {
      // Standard Webhooks bodies may carry their own time; webhook-timestamp is what counts.
      if (!value.is_string())
        return wrong_type("timestamp", "a string", value);
    } else if (key != "data") {
      return invalid("unknown field '" + std::string(key) + "'", std::string(key));
    }
  }
  if (!document.contains("type"))
    return invalid("type is required", "type");
  const auto* data = document.if_contains("data");
  if (data == nullptr)
    return invalid("data is required", "data");
  if (!data->is_object())
    return wrong_type("data", "an object", *data);
  std::string status;
  std::string occurred_at;
  for (const auto& [key, value] : data->get_object()) {
    const auto field = "data." + std::string(key);
    decode_error error;
    if (key == "provider_request_id")
      error = read_string(value, field, receipt.provider_request_id);
    else if (key == "provider_message_id")
      error = read_string(value, field, receipt.provider_message_id);
    else if (key == "status")
      error = read_string(value, field, status);
    else if (key == "occurred_at")
      error = read_string(value, field, occurred_at);
    else if (key == "detail")
      error = read_string(value, field, receipt.detail);
    else
      return invalid("unknown field '" + field + "'", field);
    if (error)
      return *error;
  }
  if (receipt.provider_request_id.empty() && receipt.provider_message_id.empty())
    return invalid("data.provider_request_id or data.provider_message_id is required",
                   "data.provider_request_id");
  // Ids are printable ASCII, as herald writes them and providers name theirs: anything else
  // (a NUL cuts a SQLite string, PostgreSQL refuses it in JSON) cannot name a task.
  for (auto [field, id] : {std::pair{"data.provider_request_id", &receipt.provider_request_id},
                           std::pair{"data.provider_message_id", &receipt.provider_message_id}})
    if (!id->empty() && !domain::is_plausible_provider_id(*id))
      return invalid(std::string(field) + " must be 1 to 200 printable ASCII characters", field);
  auto parsed_status = domain::parse_receipt_status(status);
  if (!parsed_status)
    return invalid("data.status must be one of delivered, read, clicked, undelivered",
                   "data.status");
  receipt.status = *parsed_status;
  if (occurred_at.empty())
    return invalid("data.occurred_at is required", "data.occurred_at");
  auto at = domain::parse_rfc3339(occurred_at);
  if (!at)
    return invalid("data.occurred_at must be an RFC 3339 time", "data.occurred_at");
  receipt.occurred_at = *at;
  // A provider's free text: masked whole, then kept short (cut first, the start of a number or
  // key would stay in clear), not refused.
  constexpr std::size_t max_detail_length = 1000;
  receipt.detail = domain::mask_free_text(receipt.detail, max_detail_length);
  return receipt;
}

namespace {

/// Tasks a receipt (or the reconciler, for want of one) has settled: confirmed or not.
std::uint64_t settled_by_receipts(std::map<domain::task_state, std::uint64_t>& by_state) {
  using domain::task_state;
  return by_state[task_state::delivered] + by_state[task_state::read] +
         by_state[task_state::clicked] + by_state[task_state::undelivered] +
         by_state[task_state::unconfirmed];
}

/// (delivered + read + clicked) / (sent-or-later), or null while no receipt has settled any
/// task: on a channel without receipts SENT is final, and 0 would read as "nothing arrived".
json::value delivery_rate(std::map<domain::task_state, std::uint64_t>& by_state) {
  using domain::task_state;
  if (settled_by_receipts(by_state) == 0)
    return nullptr;
  const auto confirmed =
      by_state[task_state::delivered] + by_state[task_state::read] + by_state[task_state::clicked];
  const auto sent_or_later = settled_by_receipts(by_state) + by_state[task_state::sent];
  return static_cast<double>(confirmed) / static_cast<double>(sent_or_later);
}

json::object encode_counts(const std::vector<persistence::state_count>& states) {
  using domain::task_state;
  constexpr task_state all[] = {
      task_state::pending,     task_state::sending, task_state::retry_wait, task_state::sent,
      task_state::delivered,   task_state::read,    task_state::clicked,    task_state::undelivered,
      task_state::unconfirmed, task_state::failed,  task_state::dead,       task_state::expired,
      task_state::suppressed};
  std::map<task_state, std::uint64_t> by_state;
  std::uint64_t accepted = 0;
  for (const auto& count : states) {
    by_state[count.state] += count.count;
    accepted += count.count;
  }
  json::object body;
  body["accepted"] = accepted;
  for (auto state : all) {
    std::string name(domain::to_string(state));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    body[name] = by_state[state];
  }
  body["delivery_rate"] = delivery_rate(by_state);
  return body;
}

// What policy decided among the counted tasks: {"suppressed": {reason: n}, "deferred": {...}}.
json::object encode_policy_counts(const persistence::channel_stats& stats) {
  const auto by_reason = [](const std::map<std::string, std::uint64_t>& counts) {
    json::object object;
    for (const auto& [reason, count] : counts)
      object[reason] = count;
    return object;
  };
  return json::object{{"suppressed", by_reason(stats.suppressed_by_policy)},
                      {"deferred", by_reason(stats.deferred_by_policy)}};
}

} // namespace

std::string encode_cluster(const domain::cluster_view& view) {
  json::array members;
  for (const auto& member : view.members)
    members.push_back(json::object{
        {"node_id", member.node_id},
        {"address", member.address},
        {"self", member.self},
        {"last_heartbeat", member.last_heartbeat
                               ? json::value(domain::format_rfc3339(*member.last_heartbeat))
                               : json::value(nullptr)},
        {"partitions_owned", member.partitions_owned},
        {"in_flight", member.in_flight}});
  json::array peers;
  for (const auto& peer : view.peers)
    peers.push_back(json::object{{"address", peer.address}, {"connected", peer.connected}});
  return json::serialize(json::object{{"node_id", view.node_id},
                                      {"partitions", view.partitions},
                                      {"members", std::move(members)},
                                      {"peers", std::move(peers)}});
}

std::string encode_stats(const persistence::stats_report& report,
                         const persistence::stats_query& which) {
  const auto& stats = report.channels;
  json::array channels;
  std::map<domain::task_state, std::uint64_t> total;
  // The total's rate counts the channels that have a rate: another channel's SENT tasks are
  // final, not waiting for a receipt, and would pull it down.
  std::map<domain::task_state, std::uint64_t> with_receipts;
  persistence::channel_stats total_policy;
  for (const auto& channel : stats) {
    auto item = encode_counts(channel.states);
    const bool has_rate = !item["delivery_rate"].is_null();
    item["channel"] = channel.channel;
    item["policy"] = encode_policy_counts(channel);
    channels.push_back(std::move(item));
    for (const auto& count : channel.states) {
      total[count.state] += count.count;
      if (has_rate)
        with_receipts[count.state] += count.count;
    }
    for (const auto& [reason, count] : channel.suppressed_by_policy)
      total_policy.suppressed_by_policy[reason] += count;
    for (const auto& [reason, count] : channel.deferred_by_policy)
      total_policy.deferred_by_policy[reason] += count;
  }
  if (stats.empty() && !which.channel.empty()) {
    auto item = encode_counts({});
    item["channel"] = which.channel;
    item["policy"] = encode_policy_counts(total_policy);
    channels.push_back(std::move(item));
  }
  std::vector<persistence::state_count> total_counts;
  for (const auto& [state, count] : total)
    total_counts.push_back({state, count});
  json::object body;
  body["from"] =
      which.from ? json::value(domain::format_rfc3339(*which.from)) : json::value(nullptr);
  body["to"] = which.to ? json::value(domain::format_rfc3339(*which.to)) : json::value(nullptr);
  body["channels"] = std::move(channels);
  body["total"] = encode_counts(total_counts);
  body["total"].as_object()["delivery_rate"] = delivery_rate(with_receipts);
  body["total"].as_object()["policy"] = encode_policy_counts(total_policy);
  body["total"].as_object()["messages"] = report.messages;
  return json::serialize(body);
}

std::string encode_receipt_outcome(const persistence::receipt_outcome& outcome) {
  using result = persistence::receipt_outcome::outcome;
  std::string_view name = outcome.result == result::applied     ? "applied"
                          : outcome.result == result::unchanged ? "unchanged"
                                                                : "waiting";
  json::object body{{"task_id", outcome.task_id},
                    {"state", sv(domain::to_string(outcome.state))},
                    {"result", sv(name)},
                    {"duplicate", !outcome.first_time}};
  return json::serialize(body);
}

std::string inbox_cursor_text(const persistence::inbox_cursor& cursor) {
  return std::to_string(domain::to_unix_micros(cursor.created_at)) + "." + cursor.task_id;
}

std::optional<persistence::inbox_cursor> parse_inbox_cursor(std::string_view text) {
  const auto dot = text.find('.');
  if (dot == std::string_view::npos || dot == 0 || dot > 19)
    return std::nullopt;
  std::int64_t micros = 0;
  const auto digits = text.substr(0, dot);
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), micros);
  if (ec != std::errc{} || end != digits.data() + digits.size() || micros < 0)
    return std::nullopt;
  const auto task_id = text.substr(dot + 1);
  const bool plain_id = !task_id.empty() && task_id.size() <= 128 &&
                        std::all_of(task_id.begin(), task_id.end(), [](char c) {
                          return std::isalnum(static_cast<unsigned char>(c)) || c == '-' ||
                                 c == '_' || c == '.' || c == ':';
                        });
  if (!plain_id)
    return std::nullopt;
  return persistence::inbox_cursor{domain::from_unix_micros(micros), std::string{task_id}};
}

std::string encode_inbox_page(const std::string& user_id, const persistence::inbox_page& page,
                              std::size_t limit) {
  json::array items;
  items.reserve(page.items.size());
  for (const auto& entry : page.items) {
    json::object item{{"task_id", entry.task_id},
                      {"channel", entry.channel},
                      {"title", entry.title},
                      {"body", entry.body},
                      {"created_at", domain::format_rfc3339(entry.created_at)},
                      {"read", entry.read_at.has_value()}};
    if (entry.read_at)
      item["read_at"] = domain::format_rfc3339(*entry.read_at);
    if (entry.clicked_at)
      item["clicked_at"] = domain::format_rfc3339(*entry.clicked_at);
    items.push_back(std::move(item));
  }
  json::object body{{"user_id", user_id}, {"unread_count", page.unread_count}};
  body["items"] = std::move(items);
  body["next_after"] = page.items.size() == limit && !page.items.empty()
                           ? json::value(inbox_cursor_text(
                                 {page.items.back().created_at, page.items.back().task_id}))
                           : json::value(nullptr);
  return json::serialize(body);
}

int claim_status(const persistence::claim_result& result) {
  bool created = std::any_of(result.tasks.begin(), result.tasks.end(),
                             [](const auto& task) { return task.created; });
  return created ? 202 : 200;
}

namespace {

/// The members of a claim's answer after `body`'s own: message_id, trace_id, tasks.
void add_claim_result(json::object& body, const persistence::claim_result& result,
                      const std::string& trace_id) {
  json::array tasks;
  tasks.reserve(result.tasks.size());
  for (const auto& task : result.tasks) {
    json::object item{{"task_id", task.task_id},
                      {"channel", task.channel},
                      {"status", sv(domain::to_string(task.state))},
                      {"duplicate", !task.created}};
    if (task.policy_reason)
      item["policy_reason"] = sv(domain::to_string(*task.policy_reason));
    tasks.push_back(std::move(item));
  }
  body["message_id"] = result.message_id;
  body["trace_id"] = trace_id;
  body["tasks"] = std::move(tasks);
}

json::object error_object(std::string_view code, std::string_view message, std::string_view field,
                          std::optional<std::size_t> position = std::nullopt) {
  json::object error{{"code", sv(code)}, {"message", sv(message)}};
  if (!field.empty())
    error["field"] = sv(field);
  if (position)
    error["position"] = *position;
  return error;
}

} // namespace

std::string encode_claim_result(const persistence::claim_result& result,
                                const std::string& trace_id) {
  json::object body;
  add_claim_result(body, result, trace_id);
  return json::serialize(body);
}

std::string encode_batch_answers(const std::vector<batch_answer>& answers,
                                 const std::string& trace_id) {
  json::array results;
  results.reserve(answers.size());
  for (const auto& answer : answers) {
    json::object item;
    if (const auto* claim = std::get_if<persistence::claim_result>(&answer)) {
      item["status"] = claim_status(*claim);
      add_claim_result(item, *claim, trace_id);
    } else {
      const auto& error = std::get<domain::validation_error>(answer);
      item["status"] = error.status;
      item["error"] = error_object(error.code.empty() ? "invalid_request" : error.code,
                                   error.message, error.field, error.position);
    }
    results.push_back(std::move(item));
  }
  json::object body;
  body["results"] = std::move(results);
  return json::serialize(body);
}

namespace {

json::object encode_task(const persistence::task_view& task) {
  json::object item;
  item["task_id"] = task.task_id;
  item["channel"] = task.channel;
  item["recipient"] = domain::mask_recipient(task.recipient);
  item["status"] = sv(domain::to_string(task.state));
  item["attempts"] = task.attempts;
  if (task.next_attempt_at)
    item["next_attempt_at"] = domain::format_rfc3339(*task.next_attempt_at);
  if (!task.last_error.empty())
    item["last_error"] = task.last_error;
  if (task.status_questions != 0)
    item["status_questions"] = task.status_questions;
  if (task.policy_reason)
    item["policy_reason"] = sv(domain::to_string(*task.policy_reason));
  if (task.send_at)
    item["send_at"] = domain::format_rfc3339(*task.send_at);
  if (task.own_content)
    item["content"] =
        json::object{{"title", task.own_content->title}, {"body", task.own_content->body}};
  item["provider_request_id"] = task.provider_request_id;
  item["created_at"] = domain::format_rfc3339(task.created_at);
  item["updated_at"] = domain::format_rfc3339(task.updated_at);
  json::array attempts;
  attempts.reserve(task.attempt_log.size());
  for (const auto& attempt : task.attempt_log) {
    attempts.push_back(json::object{{"attempt_no", attempt.attempt_no},
                                    {"outcome", attempt.outcome},
                                    {"detail", attempt.detail},
                                    {"started_at", domain::format_rfc3339(attempt.started_at)},
                                    {"finished_at", domain::format_rfc3339(attempt.finished_at)}});
  }
  item["attempt_log"] = std::move(attempts);
  if (!task.provider_message_id.empty())
    item["provider_message_id"] = task.provider_message_id;
  json::array receipts;
  receipts.reserve(task.receipts.size());
  for (const auto& receipt : task.receipts)
    receipts.push_back(json::object{{"status", sv(domain::to_string(receipt.status))},
                                    {"source", sv(domain::to_string(receipt.source))},
                                    {"occurred_at", domain::format_rfc3339(receipt.occurred_at)},
                                    {"received_at", domain::format_rfc3339(receipt.received_at)},
                                    {"detail", receipt.detail}});
  item["receipts"] = std::move(receipts);
  return item;
}

} // namespace

std::string encode_message_view(const persistence::message_view& view) {
  const auto& message = view.message;
  json::object body;
  body["message_id"] = message.id;
  body["biz_type"] = message.key.biz_type;
  body["biz_id"] = message.key.biz_id;
  body["user_id"] = message.key.user_id;
  body["tenant"] = message.key.tenant;
  body["trace_id"] = message.trace_id;
  body["created_at"] = domain::format_rfc3339(message.created_at);
  body["category"] = sv(domain::to_string(message.category));
  body["priority"] = sv(domain::to_string(message.priority));
  body["title"] = message.title;
  body["body"] = message.body;
  // Which template the text was rendered from: a stored one's version, or the config's.
  if (message.template_name.empty()) {
    body["template"] = nullptr;
  } else {
    json::object rendered_from{{"code", message.template_name}};
    if (message.template_version) {
      rendered_from["version"] = *message.template_version;
      rendered_from["source"] = "stored";
    } else {
      rendered_from["version"] = nullptr;
      rendered_from["source"] = "config";
    }
    body["template"] = std::move(rendered_from);
  }
  json::array tasks;
  tasks.reserve(view.tasks.size());
  for (const auto& task : view.tasks)
    tasks.push_back(encode_task(task));
  body["tasks"] = std::move(tasks);
  return json::serialize(body);
}

std::string encode_dead_letters(const std::vector<persistence::dead_letter>& letters,
                                std::size_t limit) {
  json::array items;
  items.reserve(letters.size());
  for (const auto& letter : letters) {
    auto item = encode_task(letter.task);
    item["message_id"] = letter.message_id;
    item["coverage"] = sv(domain::to_string(letter.coverage));
    json::array others;
    for (const auto& other : letter.other_tasks) {
      json::object entry;
      entry["task_id"] = other.task_id;
      entry["channel"] = other.channel;
      entry["status"] = sv(domain::to_string(other.state));
      if (other.policy_reason)
        entry["policy_reason"] = sv(domain::to_string(*other.policy_reason));
      else
        entry["policy_reason"] = nullptr;
      others.push_back(std::move(entry));
    }
    item["other_tasks"] = std::move(others);
    items.push_back(std::move(item));
  }
  json::object body;
  body["dead_letters"] = std::move(items);
  // A full page may have more behind it: the next page starts after its last task.
  if (letters.size() == limit && !letters.empty())
    body["next_after"] = letters.back().task.task_id;
  else
    body["next_after"] = nullptr;
  return json::serialize(body);
}

std::string encode_replay(const persistence::replay_result& result, const std::string& task_id) {
  json::object body{{"task_id", task_id},
                    {"status", sv(domain::to_string(result.state))},
                    {"replayed", result.result == persistence::replay_result::outcome::replayed}};
  return json::serialize(body);
}

std::string encode_error(std::string_view code, std::string_view message, std::string_view field) {
  json::object body;
  body["error"] = error_object(code, message, field);
  return json::serialize(body);
}

std::string encode_error(const domain::validation_error& error) {
  json::object body;
  body["error"] = error_object(error.code, error.message, error.field, error.position);
  return json::serialize(body);
}

std::variant<json::value, domain::validation_error>
parse_json_object(std::string_view body, unsigned max_depth, json::monotonic_resource& memory) {
  return parse_request_object(body, max_depth, memory);
}

} // namespace herald::api
