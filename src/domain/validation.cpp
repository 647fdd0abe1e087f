#include "domain/validation.hpp"

#include "domain/template_definition.hpp"
#include "domain/template_text.hpp"
#include "domain/user_validation.hpp"

#include <algorithm>
#include <utility>

namespace herald::domain {
namespace {

validation_error invalid(std::string field, std::string message) {
  return validation_error{400, "invalid_request", std::move(message), std::move(field)};
}

bool is_control_char(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

bool is_biz_type_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '-';
}

// biz_id, user_id and tenant: required, bounded, printable.
std::optional<validation_error> check_id(const std::string& field, const std::string& value,
                                         std::size_t max_length) {
  if (value.empty())
    return invalid(field, "is required");
  if (value.size() > max_length)
    return invalid(field, "is longer than " + std::to_string(max_length) + " bytes");
  if (has_control_chars(value))
    return invalid(field, "contains control characters");
  return std::nullopt;
}

// Channel resolution: the explicit list (validated, duplicates dropped) or the route.
std::variant<std::vector<std::string>, validation_error>
resolve_channels(const message_request& request, const route* routed_by,
                 const routing_rules& rules) {
  const auto& limits = rules.limits;
  if (request.channels.size() > limits.max_channels)
    return invalid("channels", "has more than " + std::to_string(limits.max_channels) + " entries");
  std::vector<std::string> resolved;
  auto add = [&resolved](const std::string& channel) {
    if (std::find(resolved.begin(), resolved.end(), channel) == resolved.end())
      resolved.push_back(channel);
  };
  for (std::size_t i = 0; i < request.channels.size(); ++i) {
    const std::string& channel = request.channels[i];
    const std::string field = "channels[" + std::to_string(i) + "]";
    if (channel.empty())
      return invalid(field, "is empty");
    if (rules.channels.count(channel) == 0)
      return validation_error{422, "unknown_channel", "unknown channel '" + channel + "'", field};
    add(channel);
  }
  if (!request.channels.empty())
    return resolved;

  const std::vector<std::string>& routed =
      routed_by != nullptr ? routed_by->channels : rules.default_route;
  for (const std::string& channel : routed) {
    // Config validation should make this impossible; refuse rather than plan an unsendable task.
    if (rules.channels.count(channel) == 0)
      return validation_error{422, "unknown_channel",
                              "the route for '" + request.biz_type + "' names unknown channel '" +
                                  channel + "'",
                              "channels"};
    add(channel);
  }
  if (resolved.empty())
    return validation_error{
        422, "no_route", "no channels given and no route for biz_type '" + request.biz_type + "'",
        "channels"};
  return resolved;
}

std::optional<validation_error> check_recipients(const message_request& request,
                                                 const std::vector<std::string>& channels,
                                                 const routing_rules& rules) {
  const auto& limits = rules.limits;
  // A channel `to` leaves out takes the user's stored contact when the claim runs (and is
  // suppressed no_contact without one); an address given empty is a mistake of the caller.
  for (const std::string& channel : channels) {
    const auto it = request.to.find(channel);
    if (it != request.to.end() && it->second.empty())
      return validation_error{422, "missing_recipient",
                              "empty recipient for channel '" + channel + "'", "to." + channel};
  }
  // Every address is checked, not only the resolved channels': the others are kept for
  // failover to those channels.
  if (request.to.size() > limits.max_channels)
    return invalid("to", "has more than " + std::to_string(limits.max_channels) + " entries");
  for (const auto& [channel, recipient] : request.to) {
    if (has_control_chars(channel))
      return invalid("to", "has a key with control characters");
    const std::string field = "to." + channel;
    if (recipient.size() > limits.max_recipient_length)
      return invalid(field,
                     "is longer than " + std::to_string(limits.max_recipient_length) + " bytes");
    if (has_control_chars(recipient))
      return invalid(field, "contains control characters");
  }
  return std::nullopt;
}

struct rendered {
  std::string title;
  std::string body;
  std::optional<std::uint32_t> template_version;  ///< a stored template's
  std::map<std::string, content> channel_content; ///< channels whose text differs from the above
};

/// The stored template's text for every resolved channel: the locale's own text for the
/// message, and a channel's own where its override makes it differ.
std::variant<rendered, validation_error> render_stored(const message_request& request,
                                                       const stored_template& stored,
                                                       const std::vector<std::string>& channels,
                                                       const request_limits& limits) {
  const auto& definition = stored.definition;
  const std::string& locale = choose_locale(definition, request.locale);
  auto base = render_definition(definition, locale, "", request.params, limits, stored.code);
  if (auto* error = std::get_if<validation_error>(&base))
    return std::move(*error);
  rendered out;
  out.title = std::move(std::get<rendered_text>(base).title);
  out.body = std::move(std::get<rendered_text>(base).body);
  out.template_version = stored.version;
  for (const std::string& channel : channels) {
    auto text = render_definition(definition, locale, channel, request.params, limits, stored.code);
    if (auto* error = std::get_if<validation_error>(&text))
      return std::move(*error);
    auto& own = std::get<rendered_text>(text);
    if (own.title != out.title || own.body != out.body)
      out.channel_content.emplace(channel, content{std::move(own.title), std::move(own.body)});
  }
  return out;
}

/// The title and body of `template_name` (the request's, or its route's) or of the content:
/// the tenant's stored template of that name if `stored_templates` holds one, else the
/// configuration's.
std::variant<rendered, validation_error> render_content(const message_request& request,
                                                        const std::string& template_name,
                                                        const std::vector<std::string>& channels,
                                                        const routing_rules& rules,
                                                        const template_catalog* stored_templates) {
  const auto& limits = rules.limits;
  const bool has_template = !template_name.empty();
  const bool has_body = request.body.has_value();
  if (has_template == has_body) // the route's template is only taken when there is no content
    return invalid("template", "give exactly one of 'template' and 'content'");
  if (request.locale.size() > max_locale_length || has_control_chars(request.locale))
    return invalid("locale", "must be a BCP 47 language tag of at most " +
                                 std::to_string(max_locale_length) + " characters");

  if (has_template) {
    const std::string& name = template_name;
    if (name.size() > limits.max_template_name_length)
      return invalid("template", "is longer than " +
                                     std::to_string(limits.max_template_name_length) + " bytes");
    if (has_control_chars(name))
      return invalid("template", "contains control characters");
    if (auto error = check_params(request.params, limits))
      return *error;
    if (stored_templates != nullptr)
      if (auto stored = stored_templates->find(request.tenant, name))
        return render_stored(request, *stored, channels, limits);
    const auto found = rules.templates.find(name);
    if (found == rules.templates.end())
      return validation_error{422, "unknown_template", "unknown template '" + name + "'",
                              "template"};
    // A config template has one locale and no overrides: its text is every channel's.
    template_definition definition;
    definition.default_locale = "config";
    definition.locales["config"] = locale_text{found->second.title, found->second.body, {}};
    auto text = render_definition(definition, "config", "", request.params, limits, name);
    if (auto* error = std::get_if<validation_error>(&text))
      return std::move(*error);
    for (const std::string& channel : channels)
      if (auto error = check_body_limit(channel, std::get<rendered_text>(text).body, limits,
                                        "template '" + name + "'"))
        return *error;
    return rendered{std::move(std::get<rendered_text>(text).title),
                    std::move(std::get<rendered_text>(text).body),
                    std::nullopt,
                    {}};
  }

  // Params are stored with the message even without a template, so they are bounded too.
  if (auto error = check_params(request.params, limits))
    return *error;
  const content& body = *request.body;
  if (body.body.empty())
    return invalid("content.body", "is required");
  if (body.title.size() > limits.max_title_length)
    return invalid("content.title",
                   "is longer than " + std::to_string(limits.max_title_length) + " bytes");
  if (body.body.size() > limits.max_body_length)
    return invalid("content.body",
                   "is longer than " + std::to_string(limits.max_body_length) + " bytes");
  if (has_control_chars(body.title))
    return invalid("content.title", "contains control characters");
  if (has_control_chars_except_layout(body.body))
    return invalid("content.body", "contains control characters other than \\n and \\t");
  return rendered{body.title, body.body, std::nullopt, {}};
}

} // namespace

// A NUL would cut the text short where it is stored or sent; the others have no place in a
// title, a name or a parameter and can forge lines in what is built from them.
bool has_control_chars(std::string_view text) {
  return std::any_of(text.begin(), text.end(), is_control_char);
}

// Message text may break lines and indent; nothing else.
bool has_control_chars_except_layout(std::string_view text) {
  return std::any_of(text.begin(), text.end(),
                     [](char c) { return is_control_char(c) && c != '\n' && c != '\t'; });
}

std::optional<validation_error> check_params(const std::map<std::string, std::string>& params,
                                             const request_limits& limits) {
  if (params.size() > limits.max_params)
    return invalid("params", "has more than " + std::to_string(limits.max_params) + " entries");
  for (const auto& [key, value] : params) {
    // A bad key is not echoed in the field: it may be long or unprintable itself.
    if (key.empty() || key.size() > limits.max_param_key_length)
      return invalid("params", "has a key that is empty or longer than " +
                                   std::to_string(limits.max_param_key_length) + " bytes");
    if (has_control_chars(key))
      return invalid("params", "has a key with control characters");
    const std::string field = "params." + key;
    if (value.size() > limits.max_param_value_length)
      return invalid(field,
                     "is longer than " + std::to_string(limits.max_param_value_length) + " bytes");
    if (has_control_chars(value))
      return invalid(field, "contains control characters");
  }
  return std::nullopt;
}

std::variant<message_plan, validation_error>
plan_message(const message_request& request, const routing_rules& rules, const id_secret& secret,
             timestamp now, const std::string& trace_id, const template_catalog* stored_templates) {
  const auto& limits = rules.limits;

  if (request.biz_type.empty())
    return invalid("biz_type", "is required");
  if (request.biz_type.size() > limits.max_biz_type_length)
    return invalid("biz_type",
                   "is longer than " + std::to_string(limits.max_biz_type_length) + " bytes");
  if (!std::all_of(request.biz_type.begin(), request.biz_type.end(), is_biz_type_char))
    return invalid("biz_type", "may only contain letters, digits and _ . : -");
  if (auto error = check_id("biz_id", request.biz_id, limits.max_id_length))
    return *error;
  if (auto error = check_id("user_id", request.user_id, limits.max_id_length))
    return *error;
  if (auto error = check_id("tenant", request.tenant, limits.max_id_length))
    return *error;

  const auto found_route = rules.routes.find(request.biz_type);
  const route* routed_by = found_route != rules.routes.end() ? &found_route->second : nullptr;
  auto channels = resolve_channels(request, routed_by, rules);
  if (auto* error = std::get_if<validation_error>(&channels))
    return std::move(*error);
  const auto& resolved = std::get<std::vector<std::string>>(channels);

  if (auto error = check_recipients(request, resolved, rules))
    return *error;

  // The request decides what it gives; its route the rest.
  const std::string& template_name =
      !request.template_name.empty() || request.body || routed_by == nullptr
          ? request.template_name
          : routed_by->template_name;
  auto text = render_content(request, template_name, resolved, rules, stored_templates);
  if (auto* error = std::get_if<validation_error>(&text))
    return std::move(*error);

  if (request.expire_at) {
    if (*request.expire_at <= now)
      return invalid("expire_at", "is in the past");
    if (request.send_at && *request.expire_at <= *request.send_at)
      return invalid("expire_at", "is not after send_at");
  }

  message_plan plan;
  message_record& message = plan.message;
  message.key = message_key{request.tenant, request.biz_type, request.biz_id, request.user_id};
  message.id = message_id_for(message.key, secret);
  message.template_name = template_name;
  message.template_version = std::get<rendered>(text).template_version;
  message.params = request.params;
  for (const auto& [channel, recipient] : request.to)
    if (rules.channels.count(channel) != 0 && !recipient.empty())
      message.recipients.emplace(channel, recipient);
  for (const auto& channel : rules.user_addressed) // also for failover to them
    if (rules.channels.count(channel) != 0)
      message.recipients.emplace(channel, request.user_id); // kept if `to` named one
  message.title = std::move(std::get<rendered>(text).title);
  message.body = std::move(std::get<rendered>(text).body);
  const route no_route;
  const route& defaults = routed_by != nullptr ? *routed_by : no_route;
  message.category = request.category.value_or(defaults.category.value_or(category::transactional));
  message.priority = request.priority.value_or(defaults.priority.value_or(priority::normal));
  message.send_at = request.send_at;
  message.expire_at = request.expire_at;
  message.trace_id = trace_id;
  message.created_at = now;
  plan.in_quiet_hours = defaults.in_quiet_hours;
  plan.over_cap = defaults.over_cap;

  const auto task_for = [&](const std::string& channel) {
    const auto address = message.recipients.find(channel);
    auto task =
        task_of(message.key, channel,
                address != message.recipients.end() ? address->second : std::string(), secret);
    auto own = std::get<rendered>(text).channel_content.find(channel);
    if (own != std::get<rendered>(text).channel_content.end())
      task.own_content = own->second;
    return task;
  };
  plan.tasks.reserve(resolved.size() + defaults.escalation.size());
  for (const std::string& channel : resolved)
    plan.tasks.push_back(task_for(channel));
  // Each escalation step is a task of its own channel (its own key: a repeated request or a
  // second firing finds it), created now and due `after` the message's send time; a channel
  // the request sends on directly is not escalated to.
  const timestamp start = std::max(now, request.send_at.value_or(now));
  for (const auto& step : defaults.escalation) {
    if (std::find(resolved.begin(), resolved.end(), step.channel) != resolved.end())
      continue;
    auto task = task_for(step.channel);
    task.escalation = true;
    task.not_before = start + step.after;
    plan.tasks.push_back(std::move(task));
  }
  return plan;
}

} // namespace herald::domain
