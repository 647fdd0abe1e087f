#pragma once

// A store writer that never answers a claim — a database that hangs — behind the real typed
// interface, so the actors in front of it can be tested for their timeouts and bounds.

#include "actors/interfaces.hpp"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <caf/typed_event_based_actor.hpp>
#include <caf/typed_response_promise.hpp>

namespace herald::test {

/// The claims a silent writer is sitting on (kept, so none is answered by being dropped), and
/// the answers a test has it give late — the hung database coming back. A response promise
/// must be delivered in its actor's context, so the writer gives them on its next `flush`.
struct held_claims {
  std::vector<caf::typed_response_promise<persistence::claim_result>> promises;
  std::vector<std::pair<std::size_t, persistence::claim_result>> late_answers; ///< by index

  std::size_t size() const { return promises.size(); }
};

inline actors::store_writer_actor::behavior_type
silent_writer(actors::store_writer_actor::pointer self, std::shared_ptr<held_claims> held) {
  // Batch claims are held too, for as long as the writer lives.
  auto held_batches =
      std::make_shared<std::vector<caf::typed_response_promise<actors::claim_results>>>();
  return {
      [self, held_batches](actors::claim_atom,
                           actors::message_plans&) -> caf::result<actors::claim_results> {
        held_batches->push_back(self->make_response_promise<actors::claim_results>());
        return held_batches->back();
      },
      [self, held](actors::claim_atom,
                   domain::message_plan&) -> caf::result<persistence::claim_result> {
        held->promises.push_back(self->make_response_promise<persistence::claim_result>());
        return held->promises.back();
      },
      [](actors::apply_atom, actors::state_changes&, actors::attempt_records&) {
        return actors::task_ids{};
      },
      [](actors::failover_atom, persistence::state_change&, actors::attempt_records&,
         domain::delivery&) { return persistence::failover_result{}; },
      [](actors::replay_atom, std::string&, std::string&, domain::timestamp) {
        return persistence::replay_result{};
      },
      [](actors::receipt_atom, actors::receipt_inputs&, domain::timestamp) {
        return actors::receipt_outcomes{};
      },
      [](actors::seal_atom, domain::push_seal&, domain::timestamp) { return false; },
      [](actors::update_atom, std::string&, std::string&, domain::user_patch&, domain::timestamp) {
        return domain::user_profile{};
      },
      [](actors::attach_atom, const actors::dispatcher_actor&) {},
      [held](actors::flush_atom) {
        for (auto& [index, answer] : held->late_answers)
          held->promises.at(index).deliver(std::move(answer));
        held->late_answers.clear();
      },
  };
}

} // namespace herald::test
