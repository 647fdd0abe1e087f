#pragma once

#include "domain/cluster_view.hpp"
#include "domain/message.hpp"
#include "domain/validation.hpp"
#include "persistence/task_store.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>

namespace herald::api {

/// Deepest JSON nesting a request body may have; deeper bodies are refused before decoding.
inline constexpr unsigned default_max_json_depth = 32;

/// What json::parse lets pass in a document it accepted: the first duplicate key
/// (`duplicate_key`) or number out of the range of a double, naming its path; none when clean.
std::optional<domain::validation_error>
check_strict_json(std::string_view text, const boost::json::parse_options& options);

/// The body as a JSON object, parsed as strictly as a POST /v1/messages body (no comments,
/// trailing commas, invalid UTF-8, duplicate keys or numbers out of range); 400
/// invalid_request (or duplicate_key) otherwise. Allocates from `memory`, which must outlive
/// the value.
std::variant<boost::json::value, domain::validation_error>
parse_json_object(std::string_view body, unsigned max_depth,
                  boost::json::monotonic_resource& memory);

/// Template parameters: an object of name to string, number or boolean (numbers and booleans as
/// their JSON text); 400 invalid_request naming `params.<name>` otherwise.
std::optional<domain::validation_error> decode_params(const boost::json::value& value,
                                                      std::map<std::string, std::string>& out);

/// Turns a POST /v1/messages body into a request. Checks only the JSON contract (syntax,
/// nesting, types, known fields, no duplicate keys, finite numbers); business rules are
/// domain::plan_message's. Every refusal is a 400 invalid_request (duplicate_key for a key given
/// twice in one object) naming the offending field where one applies.
std::variant<domain::message_request, domain::validation_error>
decode_message_request(std::string_view body, unsigned max_depth = default_max_json_depth);

/// Items a POST /v1/messages/batch body may hold at most.
inline constexpr std::size_t max_batch_items = 1000;

/// One item of a batch body: the event, or why it was refused (its `field` names the item,
/// e.g. "messages[3].user_id").
using batch_item = std::variant<domain::message_request, domain::validation_error>;

/// Turns a POST /v1/messages/batch body, {"messages":[<event>, ...]} with 1 to max_batch_items
/// events, into one item per event, in order. Each event is decoded exactly as
/// decode_message_request decodes a body (each may nest `max_depth` levels), and a refused one
/// (not an object, a bad field, a duplicate key inside it) refuses only itself. What refuses the
/// whole request (400): malformed JSON, not an object, a key other than `messages`, `messages`
/// missing, not an array, empty or too long, a duplicate key outside the items.
std::variant<std::vector<batch_item>, domain::validation_error>
decode_batch_request(std::string_view body, unsigned max_depth = default_max_json_depth);

/// `error` of the batch item `index`: its field becomes a path in the batch body
/// ("user_id" -> "messages[3].user_id"; none -> "messages[3]").
domain::validation_error batch_item_error(std::size_t index, domain::validation_error error);

/// A provider's receipt callback body, decoded (POST /v1/receipts/{channel}).
struct receipt_callback_body {
  std::string provider_request_id; ///< either id may be empty, not both
  std::string provider_message_id;
  domain::receipt_status status = domain::receipt_status::delivered;
  domain::timestamp occurred_at;
  std::string detail; ///< the provider's free text, masked, then cut to 1000 bytes
};

/// Turns a receipt callback body into a receipt:
/// {"type":"herald.receipt","data":{"provider_request_id"|"provider_message_id","status",
/// "occurred_at","detail"?}}, strictly (unknown fields, wrong types, duplicate keys refused);
/// every refusal is a 400 invalid_request naming the field.
std::variant<receipt_callback_body, domain::validation_error>
decode_receipt(std::string_view body, unsigned max_depth = default_max_json_depth);

/// The answer to a recorded receipt: {"task_id","state","result","duplicate"}.
std::string encode_receipt_outcome(const persistence::receipt_outcome& outcome);

/// GET /v1/stats: {"from","to" (RFC 3339 or null),"channels":[{"channel","accepted",<state>...,
/// "delivery_rate"}],"total":{...}}; every state is a field (lower case), and they add up to
/// accepted. delivery_rate = (delivered+read+clicked) / (sent-or-later), null while no task
/// was settled by a receipt (always on a channel without receipts); the total's over the
/// channels that have one. A channel the query names is listed even with no task.
/// GET /v1/cluster's body (docs/cluster.md).
std::string encode_cluster(const domain::cluster_view& view);

std::string encode_stats(const persistence::stats_report& report,
                         const persistence::stats_query& which);

/// The HTTP status of a claim's answer: 202 when it created a task, 200 when all existed.
int claim_status(const persistence::claim_result& result);

/// `{"message_id","trace_id","tasks":[{"task_id","channel","status","duplicate"}]}`.
std::string encode_claim_result(const persistence::claim_result& result,
                                const std::string& trace_id);

/// One item's answer to POST /v1/messages/batch: its claim, or why it was refused.
using batch_answer = std::variant<persistence::claim_result, domain::validation_error>;

/// `{"results":[...]}`, one per item in order: a claim as encode_claim_result writes it with
/// its HTTP status first (`{"status":202|200,"message_id",...}`), or `{"status","error":{"code",
/// "message","field"?}}` with the error's status.
std::string encode_batch_answers(const std::vector<batch_answer>& answers,
                                 const std::string& trace_id);

/// The body of GET /v1/messages/{id}; recipients are masked.
std::string encode_message_view(const persistence::message_view& view);

/// GET /v1/dead-letters: {"dead_letters":[task + "message_id"...], "next_after": id | null};
/// next_after is set when the page is full (`limit` entries), for the next page's `after`.
std::string encode_dead_letters(const std::vector<persistence::dead_letter>& letters,
                                std::size_t limit);

/// POST /v1/dead-letters/{id}/replay: {"task_id","status","replayed"}.
std::string encode_replay(const persistence::replay_result& result, const std::string& task_id);

/// An inbox page's cursor as clients pass it back (opaque to them): "<created_at unix
/// microseconds>.<task id>".
std::string inbox_cursor_text(const persistence::inbox_cursor& cursor);

/// The cursor `text` names; nullopt when it is none (digits, '.', an id of A-Za-z0-9 - _ . :).
std::optional<persistence::inbox_cursor> parse_inbox_cursor(std::string_view text);

/// GET /v1/users/{user_id}/inbox: {"user_id","unread_count","items":[{"task_id","channel",
/// "title","body","created_at","read","read_at"?,"clicked_at"?}],"next_after": cursor | null};
/// next_after is set when the page is full (`limit` items), for the next page's `after`.
std::string encode_inbox_page(const std::string& user_id, const persistence::inbox_page& page,
                              std::size_t limit);

/// `{"error":{"code","message","field"?}}`.
std::string encode_error(const domain::validation_error& error);

/// An error body built from its parts; `field` is left out when empty.
std::string encode_error(std::string_view code, std::string_view message,
                         std::string_view field = {});

} // namespace herald::api
