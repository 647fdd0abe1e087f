#include "actors/store_reader.hpp"

#include "actors/logging_handlers.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

namespace {

// Runs a blocking store call and turns its exception into a CAF error for the requester.
template <class Result, class Call> caf::result<Result> guarded(Call&& call) {
  try {
    return call();
  } catch (const std::exception& e) {
    return caf::make_error(errc::store_unavailable, e.what());
  }
}

} // namespace

store_reader_actor::behavior_type
store_reader(store_reader_actor::stateful_pointer<store_reader_state> self,
             std::shared_ptr<persistence::task_store> store) {
  install_logging_handlers(self);
  self->state.store = std::move(store);
  return {
      [self](find_atom, const std::string& tenant, const std::string& message_id) {
        return guarded<maybe_message_view>(
            [&] { return self->state.store->find_message(tenant, message_id); });
      },
      [self](recover_atom, const std::string& after, std::uint64_t limit, domain::timestamp now,
             const persistence::unfinished_filter& which) {
        return guarded<deliveries>([&] {
          return self->state.store->load_unfinished(after, static_cast<std::size_t>(limit), now,
                                                    which);
        });
      },
      [self](load_atom, const task_ids& ids, domain::timestamp now) {
        return guarded<deliveries>([&] { return self->state.store->load_deliveries(ids, now); });
      },
      [self](letters_atom, const std::string& tenant, const persistence::dead_letter_filter& filter,
             const std::string& after, std::uint64_t limit) {
        return guarded<dead_letters>([&] {
          return self->state.store->list_dead_letters(tenant, filter, after,
                                                      static_cast<std::size_t>(limit));
        });
      },
      [self](awaiting_atom, const awaiting_query& page) {
        return guarded<awaiting_receipts>([&] {
          return self->state.store->load_awaiting_receipt(
              page.channel, page.sent_before, page.after, static_cast<std::size_t>(page.limit),
              page.owned);
        });
      },
      [self](count_atom) {
        return guarded<state_counts>([&] { return self->state.store->count_by_state(); });
      },
      [self](stats_atom, const persistence::stats_query& which) {
        return guarded<stats_report>([&] { return self->state.store->stats(which); });
      },
      [self](inbox_atom, const persistence::inbox_query& which) {
        return guarded<persistence::inbox_page>(
            [&] { return self->state.store->list_inbox(which); });
      },
      [self](item_atom, const std::string& tenant, const std::string& task_id) {
        return guarded<maybe_inbox_item>(
            [&] { return self->state.store->find_inbox_item(tenant, task_id); });
      },
      [self](user_atom, const std::string& tenant, const std::string& user_id) {
        return guarded<maybe_user_profile>(
            [&] { return self->state.store->find_user(tenant, user_id); });
      },
      [self](ping_atom) {
        return guarded<bool>([&] {
          self->state.store->ping();
          return true;
        });
      },
  };
}

} // namespace herald::actors
