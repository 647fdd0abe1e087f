#include "actors/receipt_actor.hpp"

#include "actors/dedup_shard.hpp"
#include "actors/ingest.hpp"
#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {
namespace {

using self_pointer = receipt_actor::stateful_pointer<receipt_state>;
using outcome = persistence::receipt_outcome::outcome;

// Whether an unknown task may only not be known yet: the receipt names the provider's message
// id alone, which the task gets with its SENT commit, and the lookups are not used up.
bool may_look_again(const receipt_state& st, const persistence::receipt_input& receipt,
                    std::uint32_t tries) {
  return receipt.provider_request_id.empty() && receipt.task_id.empty() &&
         tries + 1 < st.config.lookup_tries;
}

void answered(self_pointer self, const persistence::receipt_input& receipt,
              const persistence::receipt_outcome& result) {
  auto& st = self->state;
  if (result.result == outcome::unknown_task) {
    // A provider may send many receipts for tasks herald never had (another installation,
    // old data): counted, logged only at debug so they cannot flood the log.
    st.peers.metrics->receipt_rejected(receipt.channel, "unknown_task");
    log::debug("receipts.unknown_task", {{"channel", receipt.channel},
                                         {"provider_request_id", receipt.provider_request_id},
                                         {"provider_message_id", receipt.provider_message_id}});
    return;
  }
  if (result.first_time)
    st.peers.metrics->receipt(receipt.channel, domain::to_string(receipt.receipt.status));
  if (result.fallback) {
    log::info("receipts.failed_over", {{"task_id", result.task_id},
                                       {"trace_id", result.fallback->trace_id},
                                       {"channel", receipt.channel},
                                       {"fallback_task_id", result.fallback->task_id}});
    send_fallback(*st.peers.metrics, st.peers.dispatcher, receipt.channel, *result.fallback);
  }
}

void record(self_pointer self, persistence::receipt_input receipt, receipt_callback done,
            std::uint32_t tries) {
  auto& state = self->state;
  self->request(state.peers.writer, state.config.store_timeout, receipt_atom_v,
                receipt_inputs{receipt}, state.peers.clock->now())
      .then(
          [self, receipt, done, tries](receipt_outcomes& outcomes) {
            auto& st = self->state;
            if (outcomes.size() != 1) {
              done(to_service_error(caf::make_error(errc::store_unavailable)));
              return;
            }
            if (outcomes.front().result == outcome::unknown_task &&
                may_look_again(st, receipt, tries)) {
              auto wait = st.config.lookup_again_after * (1 << tries);
              self->delayed_send(self, wait, rewrite_atom_v, receipt, done, tries + 1);
              return;
            }
            answered(self, receipt, outcomes.front());
            done(std::move(outcomes.front()));
          },
          [receipt, done](caf::error& err) {
            log::warn("receipts.record_failed",
                      {{"channel", receipt.channel},
                       {"provider_request_id", receipt.provider_request_id},
                       {"error", describe(err)}});
            done(to_service_error(err)); // the provider sends it again
          });
}

void admit(self_pointer self, domain::push_seal seal, admit_callback done) {
  auto& state = self->state;
  self->request(state.peers.writer, state.config.store_timeout, seal_atom_v, seal,
                state.peers.clock->now())
      .then([done](bool admitted) { done(admitted); },
            [channel = seal.channel, done](caf::error& err) {
              log::warn("receipts.seal_failed", {{"channel", channel}, {"error", describe(err)}});
              done(to_service_error(err)); // the provider sends it again
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
        record(self, std::move(receipt), std::move(done), 0);
      },
      [self](rewrite_atom, persistence::receipt_input& receipt, receipt_callback& done,
             std::uint32_t tries) { record(self, std::move(receipt), std::move(done), tries); },
      [self](seal_atom, domain::push_seal& seal, admit_callback& done) {
        admit(self, std::move(seal), std::move(done));
      },
  };
}

} // namespace herald::actors
