#include "actors/receipt_actor.hpp"

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
  if (result.fallback) // counted and dispatched by the store writer
    log::info("receipts.failed_over", {{"task_id", result.task_id},
                                       {"trace_id", result.fallback->trace_id},
                                       {"channel", receipt.channel},
                                       {"fallback_task_id", result.fallback->task_id}});
}

void record(self_pointer self, persistence::receipt_input receipt, receipt_promise answer,
            std::uint32_t tries) {
  auto& state = self->state;
  self->request(state.peers.writer, state.config.store_timeout, receipt_atom_v,
                receipt_inputs{receipt}, state.peers.clock->now())
      .then(
          [self, receipt, answer, tries](receipt_outcomes& outcomes) mutable {
            auto& st = self->state;
            if (outcomes.size() != 1) {
              answer.deliver(caf::make_error(errc::store_unavailable, "no outcome for a receipt"));
              return;
            }
            if (outcomes.front().result == outcome::unknown_task &&
                may_look_again(st, receipt, tries)) {
              auto wait = st.config.lookup_again_after * (1 << tries);
              auto number = st.next_waiting++;
              st.waiting.emplace(number,
                                 waiting_receipt{std::move(receipt), std::move(answer), tries + 1});
              self->delayed_send(self, wait, rewrite_atom_v, number);
              return;
            }
            answered(self, receipt, outcomes.front());
            answer.deliver(std::move(outcomes.front()));
          },
          [receipt, answer](caf::error& err) mutable {
            log::warn("receipts.record_failed",
                      {{"channel", receipt.channel},
                       {"provider_request_id", receipt.provider_request_id},
                       {"error", describe(err)}});
            answer.deliver(std::move(err)); // the provider sends it again
          });
}

} // namespace

receipt_actor::behavior_type receipts(receipt_actor::stateful_pointer<receipt_state> self,
                                      receipt_peers peers, receipt_config config) {
  install_logging_handlers(self);
  self->state.peers = std::move(peers);
  self->state.config = config;
  return {
      [self](receipt_atom, persistence::receipt_input& receipt) {
        receipt.receipt.received_at = self->state.peers.clock->now();
        auto answer = self->make_response_promise<persistence::receipt_outcome>();
        record(self, std::move(receipt), answer, 0);
        return answer;
      },
      [self](rewrite_atom, std::uint64_t number) {
        auto& waiting = self->state.waiting;
        auto found = waiting.find(number);
        if (found == waiting.end())
          return;
        auto next = std::move(found->second);
        waiting.erase(found);
        record(self, std::move(next.receipt), std::move(next.answer), next.tries);
      },
      // Through the writer's group commit: a seal is committed before the push is acted on.
      [self](seal_atom, domain::push_seal& seal) {
        auto& state = self->state;
        auto answer = self->make_response_promise<bool>();
        self->request(state.peers.writer, state.config.store_timeout, seal_atom_v, seal,
                      state.peers.clock->now())
            .then([answer](bool admitted) mutable { answer.deliver(admitted); },
                  [answer, channel = seal.channel](caf::error& err) mutable {
                    log::warn("receipts.seal_failed",
                              {{"channel", channel}, {"error", describe(err)}});
                    answer.deliver(std::move(err)); // the provider sends it again
                  });
        return answer;
      },
  };
}

} // namespace herald::actors
