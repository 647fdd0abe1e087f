#pragma once

// A dispatcher that sends nothing and records what it was handed: dispatched tasks and tasks
// taken in their claim (from the store writer), and batches of due task ids (from the retry
// timer).

#include "actors/interfaces.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <caf/typed_event_based_actor.hpp>

namespace herald::test {

struct handed_out {
  std::vector<actors::deliveries> dispatched; ///< each dispatch message's tasks, in order
  std::vector<actors::taken_in_claim> taken;  ///< each taken-in-claim message, in order
  std::vector<std::string> task_ids;          ///< due task ids, in order
  std::vector<std::size_t> batches;           ///< size of each due batch
  caf::timespan pause{0}; ///< answered to each due batch: the channels' time to send it
  bool fail = false;      ///< answer each due batch with an error instead
};

inline actors::dispatcher_actor::behavior_type
recording_dispatcher(actors::dispatcher_actor::pointer, std::shared_ptr<handed_out> out) {
  return {
      [out](actors::dispatch_atom, actors::deliveries& tasks) {
        out->dispatched.push_back(std::move(tasks));
      },
      [out](actors::taken_atom, actors::taken_in_claim& taken) {
        out->taken.push_back(std::move(taken));
      },
      [out](actors::due_atom, actors::task_ids& ids) -> caf::result<caf::timespan> {
        out->batches.push_back(ids.size());
        for (auto& id : ids)
          out->task_ids.push_back(id);
        if (out->fail)
          return caf::make_error(actors::errc::store_unavailable, "read failed");
        return out->pause;
      },
      [](actors::attach_atom, const std::string&, const actors::channel_actor&) {},
      [](actors::attach_atom, const actors::retry_timer_actor&) {},
      [](actors::recover_atom, const std::string&) {},
      [](actors::page_atom) {},
      [](actors::sweep_atom) {},
      [](actors::attach_atom, const actors::cluster_member_actor&) {},
      [](actors::own_atom, const actors::partition_list&) {},
      [](actors::drain_atom) { return true; },
      [](actors::ping_atom) { return true; },
  };
}

} // namespace herald::test
