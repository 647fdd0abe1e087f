#pragma once

#include "domain/message.hpp"

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace herald::domain {

class template_catalog;

/// Why a request was refused; maps 1:1 onto the HTTP error body of design.md §7.
struct validation_error {
  int status = 400; ///< 400 invalid_request, 422 unknown_channel / no_route / ...
  std::string code; ///< e.g. "invalid_request", "unknown_channel"
  std::string message;
  std::string field; ///< JSON path of the offending field; empty when none applies
  /// 1-based character position inside `field`'s text (a template's broken placeholder)
  std::optional<std::size_t> position = std::nullopt;
};

/// Size limits on request fields; generous for real traffic, tight enough to bound a row.
struct request_limits {
  std::size_t max_id_length = 128; ///< biz_id, user_id
  std::size_t max_biz_type_length = 64;
  std::size_t max_channels = 16;
  std::size_t max_recipient_length = 320; ///< an email address may be 320 characters
  std::size_t max_template_name_length = 64;
  std::size_t max_params = 64;
  std::size_t max_param_key_length = 64;
  std::size_t max_param_value_length = 1024;
  std::size_t max_title_length = 256;
  std::size_t max_body_length = 4096;
  /// Characters a rendered body may have on these channels (by name): an SMS gateway's
  /// longest concatenated message (Twilio: 1600), a WeChat template field's practical limit.
  std::map<std::string, std::size_t> body_character_limits = {{"sms", 1600}, {"wechat", 200}};
};

/// Title and body with `${name}` (or `{{name}}`) placeholders (domain/template_text.hpp).
struct message_template {
  std::string title;
  std::string body;
};

/// One step of a route's cost-aware cascade: `channel` gets the message `after` the message's
/// send time unless a task of the message was READ (or CLICKED) by then.
struct escalation_step {
  std::string channel;
  std::chrono::milliseconds after{0};
};

/// What a biz_type's route decides when a request leaves it open.
struct route {
  std::vector<std::string> channels;        ///< when the request names none
  std::optional<domain::category> category; ///< when the request gives none
  std::optional<domain::priority> priority; ///< when the request gives none
  std::string template_name;                ///< when the request gives neither template nor content
  when_held in_quiet_hours = when_held::defer; ///< marketing inside the user's quiet hours
  when_held over_cap = when_held::drop;        ///< a task a frequency cap has no room for
  /// Channels to escalate to, in order, when the route's channels are not read in time.
  std::vector<escalation_step> escalation;
};

/// What the configuration says about channels, routes and templates.
struct routing_rules {
  std::set<std::string> channels;         ///< configured channel names
  std::map<std::string, route> routes;    ///< by biz_type
  std::vector<std::string> default_route; ///< channels when biz_type has no route
  std::map<std::string, message_template> templates;
  request_limits limits;
  /// Channels that reach a user by their user_id (the in-app inbox): `to` may leave them out,
  /// and their address is then the user_id.
  std::set<std::string> user_addressed;
};

/// Whether `text` holds a control character (below 0x20, or DEL): refused in names, addresses
/// and parameters.
bool has_control_chars(std::string_view text);

/// has_control_chars, except that line breaks (\n) and tabs are allowed: a body's layout.
bool has_control_chars_except_layout(std::string_view text);

/// Parameters within the limits: count, key length, value length, no control characters (a
/// line break in a value could forge a header line; a template's own text brings the layout).
/// 400 invalid_request naming `params.<name>`.
std::optional<validation_error> check_params(const std::map<std::string, std::string>& params,
                                             const request_limits& limits);

/// Applies every business rule to a decoded request: field limits, channel resolution
/// (explicit list or route; duplicates dropped, order kept), recipients, template rendering,
/// time window. On success the plan carries deterministic ids (keyed with `secret`) and
/// PENDING tasks. A template the tenant stored (`stored_templates`, when given) comes before
/// the configuration's of the same name.
std::variant<message_plan, validation_error>
plan_message(const message_request& request, const routing_rules& rules, const id_secret& secret,
             timestamp now, const std::string& trace_id,
             const template_catalog* stored_templates = nullptr);

} // namespace herald::domain
