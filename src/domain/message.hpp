#pragma once

#include "domain/keys.hpp"
#include "domain/task_state.hpp"
#include "domain/time.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace herald::domain {

/// Send order inside a channel: high before normal before low.
enum class priority { high, normal, low };
std::string_view to_string(priority value);
std::optional<priority> parse_priority(std::string_view text);

/// Why the message is sent; policy (quiet hours, opt-outs, caps) treats these differently.
/// `verification` (one-time codes) is never held back by preferences of other categories.
enum class category { verification, transactional, marketing, system };
std::string_view to_string(category value);
std::optional<category> parse_category(std::string_view text);

/// Literal title and body, given instead of a template.
struct content {
  std::string title;
  std::string body;
};

/// A POST /v1/messages body after JSON decoding, before any business rule was applied.
struct message_request {
  std::string tenant = "default";
  bool tenant_named = false; ///< whether the body named the tenant (else the caller's applies)
  std::string biz_type;
  std::string biz_id;
  std::string user_id;
  std::vector<std::string> channels;         ///< empty: the route for biz_type decides
  std::map<std::string, std::string> to;     ///< channel -> recipient address
  std::string template_name;                 ///< empty when `body` is given
  std::map<std::string, std::string> params; ///< template parameters, scalars as text
  std::string locale; ///< a stored template's locale to render; empty: the template's default
  std::optional<content> body;              ///< literal content instead of a template
  std::optional<domain::category> category; ///< empty: the route's, else transactional
  std::optional<domain::priority> priority; ///< empty: the route's, else normal
  std::optional<timestamp> send_at;
  std::optional<timestamp> expire_at;
};

/// The message row as stored.
struct message_record {
  std::string id;
  message_key key;
  std::string template_name;
  /// The stored template's version the text was rendered with; nullopt for a config template
  /// (or literal content).
  std::optional<std::uint32_t> template_version;
  std::map<std::string, std::string> params;
  std::map<std::string, std::string> recipients; ///< the request's `to`: also what failover uses
  std::string title; ///< rendered once at acceptance, so every attempt sends the same text
  std::string body;
  domain::category category = domain::category::transactional;
  domain::priority priority = domain::priority::normal;
  std::optional<timestamp> send_at;
  std::optional<timestamp> expire_at;
  std::string trace_id;
  timestamp created_at;
};

/// One task row as first written (state PENDING).
struct task_record {
  std::string id;
  std::string channel;
  std::string recipient;
  std::string provider_request_id;
  /// A route's escalation step (docs/policy.md): sent at `not_before` only if no task of its
  /// message was READ by then.
  bool escalation = false;
  std::optional<timestamp> not_before; ///< not sent earlier (an escalation step's time)
  /// This channel's own text (a stored template's per-channel override) when it differs from
  /// the message's title and body; nullopt: the message's.
  std::optional<content> own_content = std::nullopt;
};

/// What a route does with a task policy would hold back (quiet hours, a full frequency cap):
/// send it once it may be sent, or not at all.
enum class when_held { defer, drop };

/// An accepted request: the message and one task per resolved channel, ready to be claimed.
/// A task without a recipient takes the user's stored contact at the claim.
struct message_plan {
  message_record message;
  std::vector<task_record> tasks;
  when_held in_quiet_hours = when_held::defer; ///< the route's choice
  when_held over_cap = when_held::drop;        ///< the route's choice
};

/// Everything a channel needs to send one task; built at claim time and by recovery.
struct delivery {
  std::string task_id;
  std::string message_id;
  message_key key;                               ///< the message's business key
  std::map<std::string, std::string> recipients; ///< every address of the message, by channel
  std::string channel;
  std::string recipient;
  std::string provider_request_id;
  std::string title;
  std::string body;
  std::string trace_id;
  domain::priority priority = domain::priority::normal;
  /// The message's: policy judges a fallback task by it, as it judged the message.
  domain::category category = domain::category::transactional;
  task_state state = task_state::pending;
  std::uint32_t attempts = 0;               ///< provider calls already made
  std::optional<timestamp> next_attempt_at; ///< when RETRY_WAIT is due
  std::optional<timestamp> send_at;
  std::optional<timestamp> expire_at;
  timestamp accepted_at;
  bool escalation = false; ///< an escalation step: its SENDING mark first looks for a READ
  /// Status questions about it the provider left without an answer so far (a call or a receipt
  /// in doubt), and when the next is due: bounded by the channel's status_questions.
  std::uint32_t status_questions = 0;
  std::optional<timestamp> next_question_at;
};

/// The task of the message `key` on `channel`, with its deterministic ids (keyed with
/// `secret`): the same task whoever plans it — a request, a failover, an escalation.
task_record task_of(const message_key& key, const std::string& channel, std::string recipient,
                    const id_secret& secret);

/// The delivery of `task`, a task of `message`, as first dispatched (PENDING, no attempts).
delivery make_delivery(const message_record& message, const task_record& task);

/// The plan that claims `failed`'s message on `fallback_channel` — the very task (same key,
/// same id) that channel would have had if asked directly, so a failover never duplicates a
/// direct send (hence the installation's `secret`). nullopt when the message has no recipient
/// for that channel.
std::optional<message_plan> fallback_plan(const delivery& failed,
                                          const std::string& fallback_channel,
                                          const id_secret& secret, timestamp now);

/// The channels a task on `channel` fails over to, in order: its fallback, that channel's
/// fallback, and so on (`fallback_of`: channel -> fallback), each once, never `channel` itself:
/// a cycle ends the chain.
std::vector<std::string> fallback_chain(const std::map<std::string, std::string>& fallback_of,
                                        const std::string& channel);

/// The fallback plan (fallback_plan) for the first channel of `chain` that `failed`'s message
/// has an address for: a channel it cannot be sent on is passed over for the next. nullopt when
/// the message has an address for none of them.
std::optional<message_plan> first_fallback_plan(const delivery& failed,
                                                const std::vector<std::string>& chain,
                                                const id_secret& secret, timestamp now);

} // namespace herald::domain
