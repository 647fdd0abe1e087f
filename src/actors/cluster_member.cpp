#include "actors/cluster_member.hpp"

#include "actors/logging_handlers.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <set>

#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

namespace herald::actors {

namespace {

using self_pointer = cluster_member_actor::stateful_pointer<cluster_member_state>;
using steady = std::chrono::steady_clock;

/// The longest wait between two attempts to reach a peer.
constexpr std::chrono::milliseconds max_redial{5000};
/// How long one connection attempt may take before it counts as failed.
constexpr std::chrono::seconds connect_timeout{5};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names)
    out += (out.empty() ? "" : ",") + name;
  return out;
}

void settle_again(cluster_member_state& st, steady::time_point now) {
  st.settled = false;
  st.started = now;
  st.owned.reset();
}

// A member that went unscheduled for longer than the timeout (the process was frozen: SIGSTOP,
// a VM pause, swapping) finds every peer silent and its connections closed. That says nothing
// about the peers: it was this node that stopped. It settles again, owning nothing and taking
// the smallest rate share until it hears its peers, rather than taking every partition at the
// cluster's whole rate the moment it resumes.
void notice_stall(cluster_member_state& st) {
  const auto now = steady::now();
  if (st.settled && now - st.last_tick > st.config.timeout) {
    log::warn(
        "cluster.stalled",
        {{"for_ms",
          std::to_string(
              std::chrono::duration_cast<std::chrono::milliseconds>(now - st.last_tick).count())}});
    settle_again(st, now);
    // Beats that waited in the sockets while it was frozen say nothing of now: it waits the
    // whole timeout and takes the membership it has heard by then.
    st.wait_full_timeout = true;
  }
  st.last_tick = now;
}

// Recomputes ownership over the live members; tells the dispatcher and the channels when it
// changed. Until the member has settled (heard every configured peer, or waited a timeout
// for them) it owns nothing and takes the smallest rate share: a node starting or restarting
// next to running peers must not sweep their partitions nor send at the whole cluster's rate
// for the moment before it hears them. New tasks it accepts meanwhile are still sent (the
// hand-off routes them by the view it has).
void update_ownership(self_pointer self) {
  auto& st = self->state;
  notice_stall(st);
  const auto now = steady::now();
  // Every peer gone at once: more likely this node was cut off than all the others died. It
  // settles again, and takes everything only if none is back within the timeout.
  if (st.settled && st.members.empty() && st.view.size() > 1) {
    log::warn("cluster.alone", {{"members_before", joined(st.view)}});
    settle_again(st, now);
  }
  std::vector<std::string> view{st.config.node_id};
  std::vector<std::string> owning;
  if (st.database_reachable)
    owning.push_back(st.config.node_id);
  for (const auto& [node_id, peer] : st.members) {
    view.push_back(node_id);
    if (peer.takes_partitions)
      owning.push_back(node_id);
  }
  std::sort(view.begin(), view.end());
  std::sort(owning.begin(), owning.end());
  if (!st.settled && ((!st.wait_full_timeout && st.members.size() >= st.config.peers.size()) ||
                      now - st.started >= st.config.timeout)) {
    st.settled = true;
    st.wait_full_timeout = false;
    st.owned.reset(); // computed afresh below
  }
  if (st.owned && view == st.view && owning == st.owning)
    return;
  st.view = view;
  st.owning = owning;
  // Partitions go to the members that reach the database; owners index `view`.
  st.owners = domain::partition_owners(owning);
  for (auto& owner : st.owners)
    owner =
        static_cast<std::size_t>(std::find(view.begin(), view.end(), owning[owner]) - view.begin());
  const auto self_index = static_cast<std::size_t>(
      std::find(view.begin(), view.end(), st.config.node_id) - view.begin());
  partition_list owned;
  if (st.settled)
    for (std::size_t p = 0; p < st.owners.size(); ++p)
      if (st.owners[p] == self_index)
        owned.push_back(static_cast<domain::partition>(p));
  std::vector<domain::partition> moved;
  if (st.owned)
    std::set_symmetric_difference(st.owned->begin(), st.owned->end(), owned.begin(), owned.end(),
                                  std::back_inserter(moved));
  // The rate follows the work: a node's part of each channel's rate is its part of the
  // partitions (at least one's worth, so a node left with none still finishes what it holds).
  // Settling, it assumes every configured peer is up.
  const double rate_share =
      st.settled
          ? static_cast<double>(std::max<std::size_t>(owned.size(), 1)) / domain::partition_count
          : 1.0 / static_cast<double>(std::max(view.size(), st.config.peers.size() + 1));
  st.metrics->cluster_members(static_cast<double>(view.size()));
  st.metrics->partitions_owned(static_cast<double>(owned.size()));
  st.metrics->partition_moves(moved.size());
  st.share->set_rate_share(rate_share);
  log::info("cluster.view", {{"members", joined(view)},
                             {"owning", joined(owning)},
                             {"settled", st.settled ? "true" : "false"},
                             {"partitions_owned", std::to_string(owned.size())},
                             {"partitions_moved", std::to_string(moved.size())}});
  st.owned = owned;
  st.share->set_owned_partitions(owned);
  self->send(st.dispatcher, own_atom_v, std::move(owned));
}

member_beat beat_of(const cluster_member_state& st) {
  return {st.config.cluster_id,
          st.config.node_id,
          st.config.listen,
          st.share->in_flight(),
          st.owned ? st.owned->size() : 0,
          st.database_reachable};
}

// Every peer this node can reach: those it connected to and those that beat to it.
std::vector<cluster_peer_actor> reachable(const cluster_member_state& st) {
  std::vector<cluster_peer_actor> handles;
  std::set<caf::actor_addr> seen;
  auto add = [&](const cluster_peer_actor& handle) {
    if (handle && seen.insert(handle.address()).second)
      handles.push_back(handle);
  };
  for (const auto& [address, handle] : st.dialed)
    add(handle);
  for (const auto& [node_id, peer] : st.members)
    add(peer.handle);
  return handles;
}

void schedule_redial(self_pointer self, const std::string& address) {
  auto& st = self->state;
  auto& wait = st.redial[address];
  wait = wait.count() == 0 ? st.config.heartbeat : std::min(wait * 2, max_redial);
  self->delayed_send(self, wait, dial_atom_v, address);
}

// Whether a live member announced `address` as its own: it dialed this node.
bool member_at(const cluster_member_state& st, const std::string& address) {
  return std::any_of(st.members.begin(), st.members.end(),
                     [&](const auto& entry) { return entry.second.address == address; });
}

// Two nodes dialing each other at the same moment over TLS both lose: each side's BASP keeps
// the direct route it learned first (the connection the other dialed) and closes the one it
// dialed as redundant, so no connection survives and they redial in step for ever. Of two
// peers only the one whose address sorts first dials at once; the other looks again every
// timeout and dials itself only when that peer has not come (it is down, or the two configs
// write the addresses differently).
bool leave_dial_to_peer(self_pointer self, const std::string& address) {
  auto& st = self->state;
  if (member_at(st, address)) {
    st.waited_for.erase(address);
    self->delayed_send(self, st.config.timeout, dial_atom_v, address);
    return true;
  }
  if (address < st.config.listen && st.waited_for.insert(address).second) {
    self->delayed_send(self, st.config.timeout, dial_atom_v, address);
    return true;
  }
  st.waited_for.erase(address);
  return false;
}

void dial(self_pointer self, const std::string& address) {
  auto& st = self->state;
  // Only the configured peers (validated as host:port at start), whoever asks.
  if (std::find(st.config.peers.begin(), st.config.peers.end(), address) == st.config.peers.end())
    return;
  if (st.dialed.count(address) != 0 || leave_dial_to_peer(self, address))
    return;
  const auto colon = address.rfind(':');
  auto host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const auto port = static_cast<std::uint16_t>(std::stoul(address.substr(colon + 1)));
  self->request(st.middleman, connect_timeout, caf::connect_atom::value, std::move(host), port)
      .then(
          [self, address](const caf::node_id&, caf::strong_actor_ptr& found,
                          const std::set<std::string>& interface) {
            auto& state = self->state;
            auto handle = caf::actor_cast<cluster_peer_actor>(found);
            if (!handle || !self->home_system().assignable<cluster_peer_actor>(interface)) {
              // Another program, or a herald whose cluster messages differ from ours.
              log::warn("cluster.peer_incompatible", {{"peer", address}});
              schedule_redial(self, address);
              return;
            }
            log::info("cluster.peer_connected", {{"peer", address}});
            state.redial.erase(address);
            self->monitor(handle);
            self->send(handle, beat_atom_v, beat_of(state));
            state.dialed[address] = std::move(handle);
          },
          [self, address](caf::error& err) {
            // Peers start in any order: not there yet is routine.
            log::debug("cluster.peer_unreachable",
                       {{"peer", address}, {"error", caf::to_string(err)}});
            schedule_redial(self, address);
          });
}

void on_beat(self_pointer self, const member_beat& beat) {
  auto& st = self->state;
  auto sender = caf::actor_cast<cluster_peer_actor>(self->current_sender());
  if (!sender)
    return;
  if (beat.cluster_id != st.config.cluster_id) {
    log::error(
        "cluster.foreign_node",
        {{"node_id", beat.node_id}, {"peer", beat.address}, {"cluster_id", beat.cluster_id}});
    return;
  }
  if (beat.node_id == st.config.node_id) {
    log::error("cluster.same_node_id", {{"node_id", beat.node_id}, {"peer", beat.address}});
    return;
  }
  auto found = st.members.find(beat.node_id);
  const bool is_new = found == st.members.end();
  if (is_new || found->second.handle != sender)
    self->monitor(sender);
  auto& peer = st.members[beat.node_id];
  peer.address = beat.address;
  peer.handle = sender;
  peer.heard = steady::now();
  peer.heard_at = st.clock->now();
  peer.in_flight = beat.in_flight;
  const bool eligibility_changed = peer.takes_partitions != beat.takes_partitions;
  peer.takes_partitions = beat.takes_partitions;
  if (eligibility_changed)
    log::warn("cluster.member_database",
              {{"member", beat.node_id}, {"reachable", beat.takes_partitions ? "true" : "false"}});
  if (is_new) {
    log::info("cluster.member_joined", {{"member", beat.node_id}, {"address", beat.address}});
    // Answer at once, so the newcomer sees this node without waiting a heartbeat.
    self->send(sender, beat_atom_v, beat_of(st));
  }
  if (is_new || eligibility_changed)
    update_ownership(self);
}

// Tells every peer at once (not at the next heartbeat) that this node gave its partitions up
// or takes them again.
void beat_now(self_pointer self) {
  const auto beat = beat_of(self->state);
  for (auto& handle : reachable(self->state))
    self->send(handle, beat_atom_v, beat);
}

void database_reachable(self_pointer self, bool reachable) {
  auto& st = self->state;
  if (st.database_reachable == reachable)
    return;
  st.database_reachable = reachable;
  if (reachable)
    log::info("cluster.database_back", {{"partitions", "taken again"}});
  else
    log::warn("cluster.database_lost",
              {{"silent_ms", std::to_string(st.config.database_timeout.count())},
               {"partitions", "given up"}});
  update_ownership(self);
  beat_now(self);
}

// Asks the database whether it answers (one ping at a time); gives the partitions up once it
// has not for database_timeout, and takes them again at its first answer.
void watch_database(self_pointer self) {
  auto& st = self->state;
  const auto now = steady::now();
  if (st.database_reachable && now - st.database_answered > st.config.database_timeout)
    database_reachable(self, false);
  if (st.pinging)
    return;
  st.pinging = true;
  self->request(st.reader, st.config.database_timeout, ping_atom_v)
      .then(
          [self](bool) {
            self->state.pinging = false;
            self->state.database_answered = steady::now();
            database_reachable(self, true);
          },
          [self](caf::error& err) {
            self->state.pinging = false;
            log::debug("cluster.database_ping_failed", {{"error", describe(err)}});
          });
}

void on_tick(self_pointer self) {
  auto& st = self->state;
  const auto now = steady::now();
  bool changed = !st.settled || now - st.last_tick > st.config.timeout; // settling, or stalled
  if (!changed)
    st.last_tick = now;
  for (auto it = st.members.begin(); it != st.members.end();) {
    if (now - it->second.heard > st.config.timeout) {
      log::warn("cluster.member_lost", {{"member", it->first}, {"reason", "silent"}});
      it = st.members.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  if (changed)
    update_ownership(self);
  watch_database(self);
  beat_now(self);
  self->delayed_send(self, st.config.heartbeat, tick_atom_v);
}

void on_down(self_pointer self, const caf::down_msg& down) {
  auto& st = self->state;
  bool lost = false;
  for (auto it = st.members.begin(); it != st.members.end();) {
    if (it->second.handle.address() == down.source) {
      log::warn("cluster.member_lost", {{"member", it->first}, {"reason", "connection closed"}});
      it = st.members.erase(it);
      lost = true;
    } else {
      ++it;
    }
  }
  for (auto it = st.dialed.begin(); it != st.dialed.end();) {
    if (it->second.address() == down.source) {
      const auto address = it->first;
      it = st.dialed.erase(it);
      schedule_redial(self, address);
    } else {
      ++it;
    }
  }
  if (lost)
    update_ownership(self);
}

// Tasks a peer accepted for this node's partitions; only from a member of this cluster (its
// heartbeat carried our cluster id), which a node of another installation never is.
void on_handoff(self_pointer self, task_handoff& handoff) {
  auto& st = self->state;
  const auto sender = caf::actor_cast<cluster_peer_actor>(self->current_sender());
  const bool member =
      sender && std::any_of(st.members.begin(), st.members.end(),
                            [&](const auto& entry) { return entry.second.handle == sender; });
  if (!member || handoff.cluster_id != st.config.cluster_id) {
    log::warn("cluster.refused_handoff",
              {{"from", sender ? caf::to_string(sender->node()) : std::string{"unknown"}},
               {"member", member ? "true" : "false"}});
    return;
  }
  caf::anon_send(st.dispatcher, due_atom_v, std::move(handoff.task_ids));
}

// Sends forwarded tasks to the owners of their partitions; a task whose owner this node is
// now (the view changed) is dispatched here, and one whose owner cannot be reached is left to
// that owner's sweep.
void hand_off(self_pointer self, const partitioned_tasks& tasks) {
  auto& st = self->state;
  std::map<std::string, task_handoff> by_owner;
  for (const auto& [partition, task_id] : tasks)
    if (partition < st.owners.size()) {
      auto& handoff = by_owner[st.view[st.owners[partition]]];
      handoff.cluster_id = st.config.cluster_id;
      handoff.task_ids.push_back(task_id);
    }
  for (auto& [owner, handoff] : by_owner) {
    if (owner == st.config.node_id) {
      caf::anon_send(st.dispatcher, due_atom_v, std::move(handoff.task_ids)); // its answer: unused
      continue;
    }
    auto peer = st.members.find(owner);
    if (peer != st.members.end())
      self->send(peer->second.handle, handoff_atom_v, std::move(handoff));
  }
}

// Whether the message being handled came over the network. The middleman delivers to an actor
// whatever a peer sends it, whatever the published interface says: the node's own messages
// (tick, dial, forward) are taken only from an actor of this process. A message without a
// sender counts as foreign: BASP delivers one whose source a peer left empty that way.
bool from_another_node(self_pointer self) {
  const auto& sender = self->current_sender();
  if (sender == nullptr || sender->node() != self->node()) {
    log::warn("cluster.refused_message",
              {{"from", sender ? caf::to_string(sender->node()) : std::string{"unknown"}}});
    return true;
  }
  return false;
}

domain::cluster_view view_of(const cluster_member_state& st) {
  domain::cluster_view view;
  view.node_id = st.config.node_id;
  view.partitions = domain::partition_count;
  std::vector<std::size_t> owned(st.view.size(), 0);
  for (auto owner : st.owners)
    owned[owner] += 1;
  for (std::size_t i = 0; i < st.view.size(); ++i) {
    domain::member_view member;
    member.node_id = st.view[i];
    member.partitions_owned = owned[i];
    if (member.node_id == st.config.node_id) {
      member.self = true;
      if (!st.settled)
        member.partitions_owned = 0; // not before it has heard its peers
      member.address = st.config.listen;
      member.last_heartbeat = st.clock->now();
      member.in_flight = st.share->in_flight();
    } else if (auto peer = st.members.find(member.node_id); peer != st.members.end()) {
      member.address = peer->second.address;
      member.last_heartbeat = peer->second.heard_at;
      member.in_flight = peer->second.in_flight;
    }
    view.members.push_back(std::move(member));
  }
  for (const auto& address : st.config.peers)
    view.peers.push_back({address, st.dialed.count(address) != 0 || member_at(st, address)});
  return view;
}

} // namespace

cluster_member_actor::behavior_type
cluster_member(cluster_member_actor::stateful_pointer<cluster_member_state> self,
               cluster_config config, cluster_member_peers peers) {
  install_logging_handlers(self);
  auto& init = self->state;
  init.config = std::move(config);
  init.dispatcher = std::move(peers.dispatcher);
  init.reader = std::move(peers.reader);
  init.middleman = std::move(peers.middleman);
  init.share = std::move(peers.share);
  init.metrics = std::move(peers.metrics);
  init.clock = std::move(peers.clock);
  self->set_down_handler([self](caf::down_msg& down) { on_down(self, down); });
  init.started = steady::now();
  init.last_tick = init.started;
  init.database_answered = init.started; // it was reached at start, or the node would not run
  update_ownership(self);                // settled at once only without peers to wait for
  self->send(self, tick_atom_v);
  return {
      [self](beat_atom, const member_beat& beat) { on_beat(self, beat); },
      [self](handoff_atom, task_handoff& handoff) { on_handoff(self, handoff); },
      [self](forward_atom, const partitioned_tasks& tasks) {
        if (!from_another_node(self))
          hand_off(self, tasks);
      },
      [self](tick_atom) {
        if (!from_another_node(self))
          on_tick(self);
      },
      [self](dial_atom, const std::string& address) {
        if (!from_another_node(self))
          dial(self, address);
      },
      [self](cluster_atom) { return view_of(self->state); },
  };
}

} // namespace herald::actors
