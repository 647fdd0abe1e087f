#pragma once

// Stored templates (PUT /v1/templates/{code}): a title and body per locale, with optional
// per-channel overrides, checked when saved and rendered at acceptance (docs/policy.md).

#include "domain/time.hpp"
#include "domain/validation.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace herald::domain {

/// A channel's own title and/or body in one locale (a short SMS body, say); what it leaves out
/// is the locale's.
struct channel_text {
  std::optional<std::string> title;
  std::optional<std::string> body;
};

/// A template's text in one locale.
struct locale_text {
  std::string title;
  std::string body;
  std::map<std::string, channel_text> channels; ///< by channel name
};

/// What a stored template says. `variables`, when given, lists every parameter its
/// placeholders may name, so a typo is refused when saved rather than at the first send.
struct template_definition {
  std::string default_locale;
  std::map<std::string, locale_text> locales; ///< by BCP 47 tag ("en", "zh-CN")
  std::optional<std::vector<std::string>> variables;
};

/// One saved version of a tenant's template.
struct stored_template {
  std::string tenant;
  std::string code;
  std::uint32_t version = 0; ///< 1, 2, 3 … per (tenant, code), never reused
  template_definition definition;
  timestamp created_at;
};

/// Longest template code; codes are plain names (`A-Z a-z 0-9 _ . -`).
inline constexpr std::size_t max_template_code_length = 64;
/// At most this many locales in one definition (a preview renders each for every channel).
inline constexpr std::size_t max_template_locales = 32;
/// A rendered title or body longer than this is refused (422 text_too_long).
inline constexpr std::size_t max_rendered_title_length = 1024;
inline constexpr std::size_t max_rendered_body_length = 64 * 1024;

/// Whether `code` may name a stored template.
bool is_template_code(std::string_view code);

/// The first reason `definition` cannot be saved, as 422 invalid_template whose `field` is the
/// JSON path inside the definition ("locales.en.channels.sms.body") and, for a placeholder,
/// whose `position` is its 1-based character: a missing default locale, an unknown channel
/// (`channels` are the configured ones), broken placeholder syntax, a placeholder
/// `variables` does not list, text over the size limits, or an SMS/WeChat body whose text
/// alone already exceeds the channel's character limit.
std::optional<validation_error> check_definition(const template_definition& definition,
                                                 const std::set<std::string>& channels,
                                                 const request_limits& limits);

/// The locale a render uses: `requested` if the template has it, else its language's ("zh"
/// for "zh-TW") if the template has that, else the template's default locale.
const std::string& choose_locale(const template_definition& definition, std::string_view requested);

/// A rendered title and body.
struct rendered_text {
  std::string title;
  std::string body;
  bool operator==(const rendered_text& other) const {
    return title == other.title && body == other.body;
  }
};

/// Renders what `channel` gets in `locale` (a key of the definition's locales): the channel's
/// override where it has one, the locale's text otherwise; an empty `channel` renders the
/// locale's own text. Parameters are inserted as data. Refusals: 422 missing_parameter
/// (field `params.<name>`), 422 text_too_long when the rendered body exceeds the channel's
/// character limit. `code` names the template in messages.
std::variant<rendered_text, validation_error>
render_definition(const template_definition& definition, const std::string& locale,
                  const std::string& channel, const std::map<std::string, std::string>& params,
                  const request_limits& limits, std::string_view code);

/// 422 text_too_long if `body`, rendered for `channel`, has more characters than the
/// channel's limit; `origin` names the template or content in the message.
std::optional<validation_error> check_body_limit(const std::string& channel, std::string_view body,
                                                 const request_limits& limits,
                                                 std::string_view origin);

/// What one locale of a template renders to: its own text and each channel's.
struct locale_preview {
  std::string locale;
  rendered_text text;
  std::map<std::string, rendered_text> channels;
};

/// Renders `definition` for POST /v1/templates/{code}/preview: the locale choose_locale picks
/// for `requested` (every locale when empty), each for every one of `channels`, with the same
/// checks and refusals as a message would meet (check_params, render_definition).
std::variant<std::vector<locale_preview>, validation_error>
preview_definition(const template_definition& definition, std::string_view requested,
                   const std::set<std::string>& channels,
                   const std::map<std::string, std::string>& params, const request_limits& limits,
                   std::string_view code);

/// The latest live version of each stored template of each tenant: what a node renders from
/// at acceptance without asking the database. Entries are shared and never change, so a copy
/// of the catalog is cheap and safe to read while another copy is updated.
class template_catalog {
public:
  /// Holds `stored` unless a newer version of its template is held already.
  void put(stored_template stored);

  /// Forgets the template (deleted).
  void erase(const std::string& tenant, const std::string& code);

  /// The held version of the template; nullptr when none.
  std::shared_ptr<const stored_template> find(const std::string& tenant,
                                              const std::string& code) const;

  std::size_t size() const { return entries_.size(); }

private:
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const stored_template>> entries_;
};

} // namespace herald::domain
