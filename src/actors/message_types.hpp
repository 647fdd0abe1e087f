#pragma once

// Every value type that travels in a message between herald's actors: each has a CAF type id
// (the block below, whose order gives the ids) and an inspect() overload, so any of them can be
// serialised, printed or sent to another node.
//
// The overload is generic: for a struct listed in the block it inspects every field in
// declaration order (Boost.PFR reads an aggregate's fields), so a field added to a struct can
// never be left out of its serialisation. std::optional, which CAF 0.17 cannot inspect, is
// written as a flag and, when present, the value.

#include "domain/channel_scheduler.hpp"
#include "domain/cluster_view.hpp"
#include "domain/message.hpp"
#include "domain/partitions.hpp"
#include "domain/policy.hpp"
#include "domain/push_seal.hpp"
#include "domain/template_definition.hpp"
#include "persistence/task_store.hpp"
#include "providers/provider.hpp"

#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include <boost/pfr/core.hpp>
#include <caf/detail/is_complete.hpp>
#include <caf/error.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

namespace herald::actors {

/// A page of SENT tasks awaiting a receipt (the reconciler's read; store_reader_actor).
struct awaiting_query {
  std::string channel;
  domain::timestamp sent_before;       ///< sent by then
  persistence::awaiting_cursor after;  ///< oldest first after this one
  std::uint64_t limit = 0;             ///< at most this many
  persistence::partition_filter owned; ///< only tasks of these partitions
};

/// The store writer's word to a channel after a claim that took places it offered
/// (domain::claim_places): the tasks the claim created taken, and how many of the places it
/// took went unused, of which epoch of the places.
struct taken_in_claim {
  std::string channel;
  std::vector<domain::ready_call> calls;
  std::uint64_t unused = 0;
  std::uint64_t epoch = 0;
};

} // namespace herald::actors

CAF_BEGIN_TYPE_ID_BLOCK(herald, caf::first_custom_type_id)

// domain
CAF_ADD_TYPE_ID(herald, (herald::domain::content))
CAF_ADD_TYPE_ID(herald, (herald::domain::message_key))
CAF_ADD_TYPE_ID(herald, (herald::domain::message_record))
CAF_ADD_TYPE_ID(herald, (herald::domain::task_record))
CAF_ADD_TYPE_ID(herald, (herald::domain::message_plan))
CAF_ADD_TYPE_ID(herald, (herald::domain::delivery))
CAF_ADD_TYPE_ID(herald, (herald::domain::ready_call))
CAF_ADD_TYPE_ID(herald, (herald::domain::do_not_disturb))
CAF_ADD_TYPE_ID(herald, (herald::domain::user_profile))
CAF_ADD_TYPE_ID(herald, (herald::domain::user_patch))
CAF_ADD_TYPE_ID(herald, (herald::domain::push_seal))
CAF_ADD_TYPE_ID(herald, (herald::domain::channel_text))
CAF_ADD_TYPE_ID(herald, (herald::domain::locale_text))
CAF_ADD_TYPE_ID(herald, (herald::domain::template_definition))
CAF_ADD_TYPE_ID(herald, (herald::domain::stored_template))
CAF_ADD_TYPE_ID(herald, (herald::domain::member_view))
CAF_ADD_TYPE_ID(herald, (herald::domain::peer_view))
CAF_ADD_TYPE_ID(herald, (herald::domain::cluster_view))
CAF_ADD_TYPE_ID(herald, (std::optional<herald::domain::user_profile>))
CAF_ADD_TYPE_ID(herald, (std::optional<herald::domain::stored_template>))

// persistence
CAF_ADD_TYPE_ID(herald, (herald::persistence::claim_outcome))
CAF_ADD_TYPE_ID(herald, (herald::persistence::claim_result))
CAF_ADD_TYPE_ID(herald, (herald::persistence::state_change))
CAF_ADD_TYPE_ID(herald, (herald::persistence::attempt_record))
CAF_ADD_TYPE_ID(herald, (herald::persistence::receipt_record))
CAF_ADD_TYPE_ID(herald, (herald::persistence::task_view))
CAF_ADD_TYPE_ID(herald, (herald::persistence::message_view))
CAF_ADD_TYPE_ID(herald, (herald::persistence::other_task))
CAF_ADD_TYPE_ID(herald, (herald::persistence::dead_letter))
CAF_ADD_TYPE_ID(herald, (herald::persistence::dead_letter_filter))
CAF_ADD_TYPE_ID(herald, (herald::persistence::replay_result))
CAF_ADD_TYPE_ID(herald, (herald::persistence::fallback_link))
CAF_ADD_TYPE_ID(herald, (herald::persistence::failover_result))
CAF_ADD_TYPE_ID(herald, (herald::persistence::receipt_input))
CAF_ADD_TYPE_ID(herald, (herald::persistence::receipt_outcome))
CAF_ADD_TYPE_ID(herald, (herald::persistence::awaiting_receipt))
CAF_ADD_TYPE_ID(herald, (herald::persistence::awaiting_cursor))
CAF_ADD_TYPE_ID(herald, (herald::persistence::state_count))
CAF_ADD_TYPE_ID(herald, (herald::persistence::stats_query))
CAF_ADD_TYPE_ID(herald, (herald::persistence::channel_stats))
CAF_ADD_TYPE_ID(herald, (herald::persistence::stats_report))
CAF_ADD_TYPE_ID(herald, (herald::persistence::inbox_item))
CAF_ADD_TYPE_ID(herald, (herald::persistence::inbox_cursor))
CAF_ADD_TYPE_ID(herald, (herald::persistence::inbox_query))
CAF_ADD_TYPE_ID(herald, (herald::persistence::inbox_page))
CAF_ADD_TYPE_ID(herald, (herald::persistence::unfinished_filter))
CAF_ADD_TYPE_ID(herald, (std::optional<herald::persistence::message_view>))
CAF_ADD_TYPE_ID(herald, (std::optional<herald::persistence::inbox_item>))

// providers
CAF_ADD_TYPE_ID(herald, (herald::providers::provider_result))
CAF_ADD_TYPE_ID(herald, (herald::providers::status_answer))

// actors
CAF_ADD_TYPE_ID(herald, (herald::actors::awaiting_query))
CAF_ADD_TYPE_ID(herald, (herald::actors::taken_in_claim))

// lists (std::vector<std::string>, the task ids, is one of CAF's own types)
CAF_ADD_TYPE_ID(herald, (std::vector<herald::domain::message_plan>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::domain::delivery>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::claim_result>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::state_change>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::attempt_record>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::state_count>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::dead_letter>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::receipt_input>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::receipt_outcome>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::persistence::awaiting_receipt>))
CAF_ADD_TYPE_ID(herald, (std::vector<herald::domain::partition>))
CAF_ADD_TYPE_ID(herald, (std::vector<std::pair<herald::domain::partition, std::string>>))

CAF_END_TYPE_ID_BLOCK(herald)

namespace herald::wire {

/// Whether T is one of the structs of the block above (inspected field by field).
template <class T>
inline constexpr bool is_listed_struct =
    std::is_aggregate_v<T>&& caf::detail::is_complete<caf::type_id<T>>::value;

/// An optional field seen by an inspector: a flag, then the value when present.
template <class T> struct optional_field { std::optional<T>& value; };

template <class T> optional_field<T> as_field(std::optional<T>& x) {
  return {x};
}
template <class T> T& as_field(T& x) {
  return x;
}

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, optional_field<T>& x) {
  if constexpr (Inspector::reads_state) { // saving or printing: no copy of the value
    bool present = x.value.has_value();
    if (!present)
      return f(present);
    return f(present, *x.value);
  } else {
    bool present = false;
    if (auto err = f(present))
      return err;
    if (!present) {
      x.value.reset();
      return caf::none;
    }
    T value{};
    if (auto err = f(value))
      return err;
    x.value = std::move(value);
    return caf::none;
  }
}

/// Every field of a listed struct, in declaration order, under the struct's type name.
template <class Inspector, class T>
auto inspect(Inspector& f, T& x)
    -> std::enable_if_t<is_listed_struct<T>, typename Inspector::result_type> {
  return std::apply(
      [&](auto&... fields) {
        return f(caf::meta::type_name(caf::type_name<T>::value), as_field(fields)...);
      },
      boost::pfr::structure_tie(x));
}

/// A listed optional sent on its own (a look-up's answer: found or not).
template <class Inspector, class T>
auto inspect(Inspector& f, std::optional<T>& x)
    -> std::enable_if_t<caf::detail::is_complete<caf::type_id<std::optional<T>>>::value,
                        typename Inspector::result_type> {
  optional_field<T> field{x};
  return inspect(f, field);
}

} // namespace herald::wire

// CAF finds inspect() by argument-dependent lookup, in the namespace of each type.
namespace herald::domain {
using herald::wire::inspect;
}
namespace herald::persistence {
using herald::wire::inspect;
}
namespace herald::providers {
using herald::wire::inspect;
}
namespace herald::actors {
using herald::wire::inspect;
}
