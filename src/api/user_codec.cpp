#include "api/user_codec.hpp"

#include "domain/time.hpp"

#include <optional>
#include <utility>

#include <boost/json.hpp>

namespace herald::api {
namespace json = boost::json;

namespace {

using decode_error = std::optional<domain::validation_error>;

domain::validation_error invalid(std::string message, std::string field = {}) {
  return domain::validation_error{400, "invalid_request", std::move(message), std::move(field)};
}

domain::validation_error wrong_type(const std::string& field, std::string_view expected) {
  return invalid(field + " must be " + std::string(expected), field);
}

std::string text_of(const json::string& text) {
  return std::string(text.data(), text.size());
}

/// A string field; null clears it (the empty string).
decode_error read_text(const json::value& value, const std::string& field, std::string& out) {
  if (value.is_null()) {
    out.clear();
    return std::nullopt;
  }
  if (!value.is_string())
    return wrong_type(field, "a string or null");
  out = text_of(value.get_string());
  return std::nullopt;
}

decode_error read_contacts(const json::value& value, std::map<std::string, std::string>& out) {
  out.clear();
  if (value.is_null())
    return std::nullopt;
  if (!value.is_object())
    return wrong_type("contacts", "an object of channel to address");
  for (const auto& entry : value.get_object()) {
    std::string channel(entry.key());
    if (auto error = read_text(entry.value(), "contacts." + channel, out[channel]))
      return error;
  }
  return std::nullopt;
}

/// An array of strings, each passed to `add` with its field ("name[2]"); null is empty.
template <class Add>
decode_error read_names(const json::value& value, const std::string& field, Add add) {
  if (value.is_null())
    return std::nullopt;
  if (!value.is_array())
    return wrong_type(field, "an array of strings");
  const auto& array = value.get_array();
  for (std::size_t i = 0; i < array.size(); ++i) {
    const auto item = field + "[" + std::to_string(i) + "]";
    if (!array[i].is_string())
      return wrong_type(item, "a string");
    if (auto error = add(text_of(array[i].get_string()), item))
      return error;
  }
  return std::nullopt;
}

decode_error read_profile_field(std::string_view key, const json::value& value,
                                domain::user_patch& patch) {
  if (key == "contacts") {
    if (value.is_null() && !patch.replace) // a merge of nothing: say so rather than ignore it
      return invalid("contacts: null removes nothing in a PATCH; give a channel null to remove "
                     "its contact, or PUT the profile",
                     "contacts");
    return read_contacts(value, patch.contacts.emplace());
  }
  if (key == "time_zone")
    return read_text(value, "time_zone", patch.time_zone.emplace());
  if (key == "locale")
    return read_text(value, "locale", patch.locale.emplace());
  if (key == "opted_out_channels") {
    auto& channels = patch.opted_out_channels.emplace();
    return read_names(value, "opted_out_channels",
                      [&channels](std::string channel, const std::string&) -> decode_error {
                        channels.insert(std::move(channel));
                        return std::nullopt;
                      });
  }
  if (key == "opted_out_categories") {
    auto& categories = patch.opted_out_categories.emplace();
    return read_names(value, "opted_out_categories",
                      [&categories](const std::string& name, const std::string& field) {
                        auto parsed = domain::parse_category(name);
                        if (!parsed)
                          return decode_error{domain::validation_error{
                              422, "invalid_category",
                              field + " must be one of transactional, marketing, system", field}};
                        categories.insert(*parsed);
                        return decode_error{};
                      });
  }
  std::string field(key);
  return invalid("unknown field " + field, field);
}

} // namespace

std::variant<domain::user_patch, domain::validation_error>
decode_user_profile(std::string_view body, profile_change change, unsigned max_depth) {
  json::monotonic_resource memory;
  auto parsed = parse_json_object(body, max_depth, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return *failure;
  domain::user_patch patch;
  patch.replace = change == profile_change::replace;
  for (const auto& entry : std::get<json::value>(parsed).get_object())
    if (auto error = read_profile_field(std::string_view(entry.key().data(), entry.key().size()),
                                        entry.value(), patch))
      return *error;
  return patch;
}

std::variant<domain::user_patch, domain::validation_error> decode_dnd(std::string_view body,
                                                                      unsigned max_depth) {
  domain::user_patch patch;
  patch.dnd = domain::user_patch::dnd_change::set;
  if (body.empty())
    return patch;
  json::monotonic_resource memory;
  auto parsed = parse_json_object(body, max_depth, memory);
  if (auto* failure = std::get_if<domain::validation_error>(&parsed))
    return *failure;
  for (const auto& entry : std::get<json::value>(parsed).get_object()) {
    std::string field(entry.key());
    if (field != "until")
      return invalid("unknown field " + field, field);
    const auto& until = entry.value();
    if (until.is_null())
      continue;
    if (!until.is_string())
      return wrong_type("until", "an RFC 3339 timestamp string or null");
    const auto& text = until.get_string();
    patch.dnd_until = domain::parse_rfc3339(std::string_view(text.data(), text.size()));
    if (!patch.dnd_until)
      return domain::validation_error{422, "invalid_until",
                                      "until must be an RFC 3339 time, e.g. 2026-12-02T10:00:00Z",
                                      "until"};
  }
  return patch;
}

std::string encode_user_profile(const domain::user_profile& user) {
  json::object contacts;
  for (const auto& [channel, address] : user.contacts)
    contacts[channel] = address;
  json::array channels;
  for (const auto& channel : user.opted_out_channels)
    channels.emplace_back(channel);
  json::array categories;
  for (auto category : user.opted_out_categories)
    categories.emplace_back(domain::to_string(category));
  json::value dnd = nullptr;
  if (user.dnd) {
    json::value until = nullptr;
    if (user.dnd->until)
      until = domain::format_rfc3339(*user.dnd->until);
    dnd = json::object{{"until", std::move(until)}};
  }
  json::object body{{"user_id", user.user_id},
                    {"contacts", std::move(contacts)},
                    {"time_zone", user.time_zone},
                    {"locale", user.locale},
                    {"opted_out_channels", std::move(channels)},
                    {"opted_out_categories", std::move(categories)},
                    {"dnd", std::move(dnd)},
                    {"updated_at", domain::format_rfc3339(user.updated_at)}};
  return json::serialize(body);
}

} // namespace herald::api
