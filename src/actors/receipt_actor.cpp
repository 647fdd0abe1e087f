#include "actors/receipt_actor.hpp"

#include "actors/ingest.hpp"
#include "actors/logging_handlers.hpp"
#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <algorithm>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {
namespace {

using self_pointer = receipt_actor::stateful_pointer<receipt_state>;
using outcome = persistence::receipt_outcome::outcome;

std::string hold_key(const persistence::receipt_input& receipt) {
  return receipt.channel + '\n' + receipt.provider_request_id + '\n' + receipt.provider_message_id +
         '\n' + std::string(domain::to_string(receipt.receipt.status));
}

void record(self_pointer self, persistence::receipt_input receipt, std::uint32_t tries,
            receipt_callback done);

// Records `receipt` again later, unless it has been tried enough or too many are held: it is
// recorded already, so the reconciler settles it when its task's window ends.
void hold(self_pointer self, persistence::receipt_input receipt, std::uint32_t tries) {
  auto& st = self->state;
  auto key = hold_key(receipt);
  if (tries >= st.config.hold_tries ||
      (st.held.size() >= st.config.max_held && !st.held.count(key))) {
    st.held.erase(key);
    log::warn("receipts.hold_given_up", {{"channel", receipt.channel},
                                         {"provider_request_id", receipt.provider_request_id},
                                         {"tries", std::to_string(tries)}});
    return;
  }
  st.held.insert(std::move(key));
  auto delay = st.config.hold_first;
  for (std::uint32_t i = 0; i < tries && delay < st.config.hold_max; ++i)
    delay *= 2;
  self->delayed_send(self, std::min(delay, st.config.hold_max), rewrite_atom_v, std::move(receipt),
                     tries + 1);
}

void on_recorded(self_pointer self, const persistence::receipt_input& receipt, std::uint32_t tries,
                 const persistence::receipt_outcome& result) {
  auto& st = self->state;
  auto status = domain::to_string(receipt.receipt.status);
  if (result.result == outcome::unknown_task) {
    // A provider may send many receipts for tasks herald never had (another installation,
    // old data): counted, logged only at debug so they cannot flood the log.
    st.peers.metrics->receipt_rejected(receipt.channel, "unknown_task");
    log::debug("receipts.unknown_task", {{"channel", receipt.channel},
                                         {"provider_request_id", receipt.provider_request_id},
                                         {"provider_message_id", receipt.provider_message_id}});
    st.held.erase(hold_key(receipt));
    return;
  }
  if (result.first_time)
    st.peers.metrics->receipt(receipt.channel, status);
  if (result.fallback) {
    st.peers.metrics->failover(receipt.channel, result.fallback->channel);
    log::info("receipts.failed_over", {{"task_id", result.task_id},
                                       {"trace_id", result.fallback->trace_id},
                                       {"channel", receipt.channel},
                                       {"fallback_task_id", result.fallback->task_id}});
    self->send(st.peers.dispatcher, dispatch_atom_v, deliveries{*result.fallback});
  }
  // A confirmation waiting for its task's SENT commit is applied by that commit; "did not
  // arrive" needs a failover, so it is recorded again once the task is SENT.
  if (result.result == outcome::waiting &&
      receipt.receipt.status == domain::receipt_status::undelivered)
    hold(self, receipt, tries);
  else
    st.held.erase(hold_key(receipt));
}

void record(self_pointer self, persistence::receipt_input receipt, std::uint32_t tries,
            receipt_callback done) {
  auto& st = self->state;
  auto now = st.peers.clock->now();
  self->request(st.peers.writer, st.config.store_timeout, receipt_atom_v, receipt_inputs{receipt},
                now)
      .then(
          [self, receipt, tries, done](receipt_outcomes& outcomes) {
            if (outcomes.size() != 1) {
              if (done)
                done(to_service_error(caf::make_error(errc::store_unavailable)));
              return;
            }
            on_recorded(self, receipt, tries, outcomes.front());
            if (done)
              done(std::move(outcomes.front()));
          },
          [self, receipt, tries, done](caf::error& err) {
            log::warn("receipts.record_failed",
                      {{"channel", receipt.channel},
                       {"provider_request_id", receipt.provider_request_id},
                       {"error", describe(err)}});
            if (done)
              done(to_service_error(err)); // the provider sends it again
            else
              hold(self, receipt, tries);
          });
}

} // namespace

receipt_actor::behavior_type receipts(receipt_actor::stateful_pointer<receipt_state> self,
                                      receipt_peers peers, receipt_config config) {
  install_logging_handlers(self);
  self->state.peers = std::move(peers);
  self->state.config = config;
  return {
      [self](receipt_atom, persistence::receipt_input& receipt, receipt_callback& done) {
        receipt.receipt.received_at = self->state.peers.clock->now();
        record(self, std::move(receipt), 0, std::move(done));
      },
      [self](rewrite_atom, persistence::receipt_input& receipt, std::uint32_t tries) {
        record(self, std::move(receipt), tries, {});
      },
  };
}

} // namespace herald::actors
