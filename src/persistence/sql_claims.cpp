// Claims: messages and tasks written once per key, judged by policy, and fallback chains.
#include "persistence/sql_store_internal.hpp"

namespace herald::persistence {

using namespace store_detail;

namespace {

const std::vector<json_column> message_columns = {text{"m_id"},
                                                  text{"tenant"},
                                                  text{"biz_type"},
                                                  text{"biz_id"},
                                                  text{"user_id"},
                                                  text{"template_name"},
                                                  text{"params_json"},
                                                  text{"recipients_json"},
                                                  text{"title"},
                                                  text{"body"},
                                                  text{"category"},
                                                  text{"priority"},
                                                  {"send_at", bigint},
                                                  {"expire_at", bigint},
                                                  text{"trace_id"},
                                                  {"created_at", bigint},
                                                  {"template_version", bigint}};

const std::vector<json_column> task_columns = {
    text{"t_id"},        text{"message_id"},      text{"tenant"},
    text{"biz_type"},    text{"biz_id"},          text{"user_id"},
    text{"channel"},     text{"recipient"},       text{"provider_request_id"},
    text{"priority"},    {"created_at", bigint},  text{"status"},
    text{"reason"},      {"deferred_to", bigint}, {"escalation", bigint},
    text{"counted"},     text{"content_title"},   text{"content_body"},
    text{"lease_owner"}, {"lease_until", bigint}, text{"lease_token"}};

const std::vector<json_column> user_key_columns = {
    text{"tenant"}, text{"user_id"}, {"since", bigint}};

const std::vector<json_column> lock_key_columns = {{"k", bigint}};

// A user's key for the claim's transaction-scoped lock (FNV-1a 64 of tenant NUL user_id,
// folded to 32 bits): the same on every node, so two nodes admitting tasks of one user take
// turns. Two users sharing a key only take turns too.
std::int64_t user_lock_key(const std::string& tenant, const std::string& user_id) {
  std::uint64_t hash = 14695981039346656037ULL;
  const auto mix = [&hash](unsigned char byte) {
    hash ^= byte;
    hash *= 1099511628211ULL;
  };
  for (unsigned char c : tenant)
    mix(c);
  mix(0);
  for (unsigned char c : user_id)
    mix(c);
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(hash ^ (hash >> 32)));
}

const std::vector<json_column> key_columns = {{"slot", bigint}, text{"tenant"},  text{"biz_type"},
                                              text{"biz_id"},   text{"user_id"}, text{"channel"}};

} // namespace

namespace store_detail {

/// A claim's messages and tasks, each once (a key repeated in the batch is answered from its
/// first occurrence), written as JSON for one statement per table.
struct claim_batch {
  claim_batch(const dialect& dialect, const std::vector<domain::message_plan>& plans)
      : messages(dialect, message_columns) {
    std::unordered_set<std::string_view> message_ids;
    for (const auto& plan : plans) {
      const auto& m = plan.message;
      if (message_ids.insert(m.id).second) {
        messages.add_row();
        messages.text(m.id)
            .text(m.key.tenant)
            .text(m.key.biz_type)
            .text(m.key.biz_id)
            .text(m.key.user_id)
            .text(m.template_name)
            .text(params_json(m.params))
            .text(params_json(m.recipients))
            .text(m.title)
            .text(m.body)
            .text(domain::to_string(m.category))
            .text(domain::to_string(m.priority))
            .time(micros_of(m.send_at))
            .time(micros_of(m.expire_at))
            .text(m.trace_id)
            .number(domain::to_unix_micros(m.created_at))
            .time(m.template_version ? std::optional<std::int64_t>(*m.template_version)
                                     : std::nullopt);
      }
      for (const auto& t : plan.tasks) {
        if (!slot_of.emplace(t.id, slots.size()).second)
          continue;
        slots.push_back({&m, &t, plan.in_quiet_hours, plan.over_cap});
      }
    }
  }

  /// The task rows of the slots `wanted(index)` picks, in slot order, for one INSERT: PENDING
  /// as asked, or as policy decided (`admitted`, one per slot); an escalation step at its time;
  /// SENDING under its take's lease when `taken` (one per slot) names the take.
  template <typename Wanted>
  json_batch task_rows(const dialect& dialect, const Wanted& wanted,
                       const std::vector<domain::admitted_task>& admitted,
                       const std::vector<const claim_takes::channel_places*>& lease_of,
                       const std::vector<std::optional<std::string>>& taken) const {
    json_batch rows(dialect, task_columns);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (!wanted(i))
        continue;
      const auto& m = *slots[i].message;
      const auto& t = *slots[i].task;
      rows.add_row();
      rows.text(t.id)
          .text(m.id)
          .text(m.key.tenant)
          .text(m.key.biz_type)
          .text(m.key.biz_id)
          .text(m.key.user_id)
          .text(t.channel)
          .text(t.recipient)
          .text(t.provider_request_id)
          .text(domain::to_string(m.priority))
          .number(domain::to_unix_micros(m.created_at));
      const auto* verdict = admitted[i].verdict ? &*admitted[i].verdict : nullptr;
      const bool suppressed =
          verdict != nullptr && verdict->decision == domain::policy_verdict::kind::suppress;
      rows.text(state_text(suppressed ? domain::task_state::suppressed
                           : taken[i] ? domain::task_state::sending
                                      : domain::task_state::pending));
      if (verdict != nullptr && verdict->reason)
        rows.text(domain::to_string(*verdict->reason));
      else
        rows.null();
      // A task's own send time: policy's deferral (decided for the step's time already), else
      // its escalation step's time; the message's send_at covers the rest.
      const bool deferred = verdict != nullptr && !suppressed && verdict->reason;
      rows.time(deferred ? std::optional(domain::to_unix_micros(verdict->send_at))
                         : micros_of(admitted[i].step_time));
      rows.number(t.escalation ? 1 : 0);
      // What a step used of its caps, given back if a read suppresses it (escalation checks).
      if (t.escalation && verdict != nullptr && !verdict->counted.empty()) {
        boost::json::array counted;
        for (const auto& [counter, start] : verdict->counted)
          counted.push_back(
              boost::json::array{boost::json::string(counter), domain::to_unix_micros(start)});
        rows.text(boost::json::serialize(counted));
      } else {
        rows.null();
      }
      if (t.own_content)
        rows.text(t.own_content->title).text(t.own_content->body);
      else
        rows.null().null();
      if (taken[i])
        rows.text(lease_of[i]->lease_owner)
            .number(domain::to_unix_micros(lease_of[i]->lease_until))
            .text(*taken[i]);
      else
        rows.null().null().null();
    }
    return rows;
  }

  json_batch messages;
  std::vector<domain::claim_slot> slots;                     // one per distinct task
  std::unordered_map<std::string_view, std::size_t> slot_of; // task id -> index into `slots`
};

struct claim_answer {
  std::string task_id;
  domain::task_state state = domain::task_state::pending;
  bool created = false;
  std::optional<domain::policy_reason> policy_reason; ///< policy's, when this claim created it
  std::optional<std::string> take_token{};            ///< when this claim created it taken
};

/// What a claim wrote: one answer per distinct task, and the messages it inserted (their
/// content is the plan's; only the others need reading back).
struct claimed_rows {
  std::vector<claim_answer> answers;
  std::unordered_set<std::string> new_messages;
};

/// One answer per planned task, in plan order, each with its message as stored.
std::vector<claim_result>
claim_results(const std::vector<domain::message_plan>& plans, const claim_batch& batch,
              const std::vector<claim_answer>& answers,
              const std::unordered_map<std::string, domain::message_record>& stored) {
  std::vector<claim_result> results;
  results.reserve(plans.size());
  std::vector<bool> answered(answers.size(), false);
  for (const auto& plan : plans) {
    auto found = stored.find(plan.message.id);
    claim_result result{plan.message.id, {}, found != stored.end() ? found->second : plan.message};
    result.tasks.reserve(plan.tasks.size());
    for (const auto& t : plan.tasks) {
      const std::size_t slot = batch.slot_of.at(t.id);
      const claim_answer& a = answers[slot];
      const bool created = a.created && !answered[slot];
      result.tasks.push_back(claim_outcome{a.task_id, t.channel, a.state, created, a.policy_reason,
                                           batch.slots[slot].task->recipient,
                                           created ? a.take_token : std::nullopt});
      answered[slot] = true;
    }
    results.push_back(std::move(result));
  }
  return results;
}

} // namespace store_detail

claimed_rows sql_task_store::run_claim(const claim_batch& batch, domain::admission* policy,
                                       const claim_takes* takes) {
  // Rows are inserted in id order so concurrent claims lock keys in the same order and cannot
  // deadlock each other.
  static const std::string message_list =
      "id, tenant, biz_type, biz_id, user_id, template_name, params_json, recipients_json, title, "
      "body, category, priority, send_at, expire_at, trace_id, created_at, template_version";
  const std::string insert_messages =
      "INSERT INTO messages (" + message_list +
      ") SELECT r.m_id, r.tenant, r.biz_type, r.biz_id, r.user_id, r.template_name, "
      "r.params_json, r.recipients_json, r.title, r.body, r.category, r.priority, r.send_at, "
      "r.expire_at, r.trace_id, r.created_at, r.template_version FROM " +
      dialect_.json_rows("rows", message_columns) +
      " WHERE true ORDER BY r.m_id ON CONFLICT DO NOTHING RETURNING id";
  const std::string insert_tasks =
      "INSERT INTO tasks (id, message_id, tenant, biz_type, biz_id, user_id, channel, recipient, "
      "provider_request_id, status, priority, attempts, created_at, updated_at, policy_reason, "
      "send_at, escalation, counted_json, content_title, content_body, lease_owner, lease_until, "
      "lease_token) SELECT r.t_id, r.message_id, r.tenant, r.biz_type, r.biz_id, r.user_id, "
      "r.channel, r.recipient, r.provider_request_id, r.status, r.priority, 0, r.created_at, "
      "r.created_at, r.reason, r.deferred_to, r.escalation, r.counted, r.content_title, "
      "r.content_body, r.lease_owner, r.lease_until, r.lease_token FROM " +
      dialect_.json_rows("rows", task_columns) +
      " WHERE true ORDER BY r.t_id ON CONFLICT DO NOTHING RETURNING id";
  // Existing tasks are found by their business key: the unique index every key maps to.
  const std::string select_existing =
      "SELECT r.slot, t.id, t.status, t.policy_reason FROM " +
      dialect_.json_rows("rows", key_columns) +
      " JOIN tasks t ON t.tenant = r.tenant AND t.biz_type = r.biz_type AND t.biz_id = r.biz_id "
      "AND t.user_id = r.user_id AND t.channel = r.channel";

  claimed_rows claimed;
  std::vector<std::optional<claim_answer>> slots(batch.slots.size());
  if (!batch.messages.empty())
    for (const auto& row : statements_->fetch(insert_messages, {batch.messages.finish()}, 1))
      claimed.new_messages.insert(text_of(row[0]));
  // Answers the unanswered slots `wanted` picks with the tasks stored under their keys.
  const auto find_existing = [&](const auto& wanted) {
    json_batch keys(dialect_, key_columns);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      if (slots[i] || !wanted(i))
        continue;
      const auto* m = batch.slots[i].message;
      const auto* t = batch.slots[i].task;
      keys.add_row();
      keys.number(static_cast<std::int64_t>(i))
          .text(m->key.tenant)
          .text(m->key.biz_type)
          .text(m->key.biz_id)
          .text(m->key.user_id)
          .text(t->channel);
    }
    if (keys.empty())
      return;
    for (const auto& row : statements_->fetch(select_existing, {keys.finish()}, 4)) {
      auto slot = static_cast<std::size_t>(to_int(row[0]));
      if (slot < slots.size())
        slots[slot] = claim_answer{text_of(row[1]), state_of(row[2]), false,
                                   domain::parse_policy_reason(text_of(row[3]))};
    }
  };
  // A resubmission's tasks (its message was there already) mostly exist: read them first.
  // Left to the INSERT, each would be a conflict on the unique key, and a conflict with a row
  // the state writer is updating waits for that transaction's COMMIT (fsync included): on
  // PostgreSQL that made claims with resubmissions take ~1 ms per row.
  find_existing(
      [&](std::size_t i) { return claimed.new_messages.count(batch.slots[i].message->id) == 0; });
  // Policy decides the tasks about to be created (domain::admit).
  std::vector<bool> stored(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i)
    stored[i] = slots[i].has_value();
  const auto admitted = domain::admit(batch.slots, stored, policy);
  // The new tasks that go at once take their channel's places, in slot order.
  std::vector<const claim_takes::channel_places*> lease_of(slots.size(), nullptr);
  std::vector<std::optional<std::string>> taken(slots.size());
  if (takes != nullptr && !takes->by_channel.empty()) {
    std::map<std::string_view, std::size_t> places_left;
    for (const auto& [channel, places] : takes->by_channel)
      places_left.emplace(channel, places.places);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const auto* task = batch.slots[i].task;
      auto left = places_left.find(task->channel);
      if (slots[i] || left == places_left.end() || left->second == 0 ||
          !domain::goes_at_once(batch.slots[i], admitted[i], takes->now))
        continue;
      --left->second;
      lease_of[i] = &takes->by_channel.at(task->channel);
      taken[i] = takes->token_prefix + task->id;
    }
  }
  json_batch new_tasks = batch.task_rows(
      dialect_, [&](std::size_t i) { return !slots[i]; }, admitted, lease_of, taken);
  cap_counts admissions; // what the admitted tasks add to their counters
  if (!new_tasks.empty())
    for (const auto& row : statements_->fetch(insert_tasks, {new_tasks.finish()}, 1)) {
      auto it = batch.slot_of.find(text_of(row[0]));
      if (it == batch.slot_of.end())
        continue;
      // Answered PENDING also when taken (SENDING under its channel's lease): to the client a
      // new task is accepted and not yet sent (docs/api.md); the token tells the writer.
      claim_answer answer{std::string(it->first), domain::task_state::pending, true, std::nullopt,
                          taken[it->second]};
      if (const auto& verdict = admitted[it->second].verdict) {
        const auto& key = batch.slots[it->second].message->key;
        answer.policy_reason = verdict->reason;
        if (verdict->decision == domain::policy_verdict::kind::suppress) {
          answer.state = domain::task_state::suppressed;
          note_entered(answer.task_id, answer.state, batch.slots[it->second].message->created_at);
        }
        for (const auto& [counter, start] : verdict->counted)
          ++admissions[{key.tenant, key.user_id, counter, domain::to_unix_micros(start)}];
      }
      slots[it->second] = std::move(answer);
    }
  if (!admissions.empty())
    statements_->execute(
        "INSERT INTO frequency_counts (tenant, user_id, counter, window_start, used) SELECT "
        "r.tenant, r.user_id, r.counter, r.window_start, r.added FROM " +
            dialect_.json_rows("rows", count_columns) +
            " WHERE true ON CONFLICT (tenant, user_id, counter, window_start) DO UPDATE SET "
            "used = frequency_counts.used + excluded.used",
        {cap_count_rows(dialect_, admissions)});
  // What the INSERT found taken was claimed by a concurrent claim (another node) meanwhile.
  find_existing([](std::size_t) { return true; });
  claimed.answers.reserve(slots.size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (!slots[i])
      throw store_error("claim failed: task " + batch.slots[i].task->id +
                        " was neither inserted nor found (an id used by another key?)");
    claimed.answers.push_back(std::move(*slots[i]));
  }
  return claimed;
}

domain::admission sql_task_store::read_admission(const std::vector<domain::message_plan>& plans) {
  domain::admission admission(
      options_.policy->rules,
      [zones = options_.policy->zones](const std::string& name) { return zones->find(name); });
  json_batch users(dialect_, user_key_columns);
  json_batch capped(dialect_, user_key_columns);
  json_batch lock_keys(dialect_, lock_key_columns);
  std::set<std::pair<std::string_view, std::string_view>> seen, seen_capped;
  for (const auto& plan : plans) {
    const auto& key = plan.message.key;
    // Windows a task may be counted in start at most a day before it is claimed (its day in
    // the furthest zone west); deferred tasks' windows start later.
    const auto since = domain::to_unix_micros(plan.message.created_at - std::chrono::hours{48});
    if (seen.emplace(key.tenant, key.user_id).second) {
      users.add_row();
      users.text(key.tenant).text(key.user_id).number(since);
    }
    if (admission.rules().capped(plan.message.category) &&
        seen_capped.emplace(key.tenant, key.user_id).second) {
      capped.add_row();
      capped.text(key.tenant).text(key.user_id).number(since);
      lock_keys.add_row();
      lock_keys.number(user_lock_key(key.tenant, key.user_id));
    }
  }
  // Before the counters are read: a concurrent claim of the same user (another node) waits
  // here until this transaction ends, then reads what it admitted.
  if (const auto lock = dialect_.lock_keys(); !capped.empty() && !lock.empty())
    statements_->fetch(lock, {lock_keys.finish()}, 1);
  for (const auto& row : statements_->fetch("SELECT " + user_columns + " FROM " +
                                                dialect_.json_rows("rows", user_key_columns) +
                                                " JOIN users u ON u.tenant = r.tenant AND "
                                                "u.user_id = r.user_id",
                                            {users.finish()}, user_column_count))
    admission.add_user(user_of(row));
  if (!capped.empty())
    for (const auto& row : statements_->fetch(
             "SELECT f.tenant, f.user_id, f.counter, f.window_start, f.used FROM " +
                 dialect_.json_rows("rows", user_key_columns) +
                 " JOIN frequency_counts f ON f.tenant = r.tenant AND f.user_id = r.user_id AND "
                 "f.window_start >= r.since",
             {capped.finish()}, 5)) {
      admission.add_usage(text_of(row[0]), text_of(row[1]), text_of(row[2]),
                          domain::from_unix_micros(to_int(row[3])),
                          static_cast<std::uint32_t>(to_int(row[4])));
    }
  return admission;
}

std::vector<claim_result> sql_task_store::claim_step(const std::vector<domain::message_plan>& plans,
                                                     const claim_takes& takes) {
  if (!options_.policy) {
    const claim_batch batch(dialect_, plans);
    auto claimed = run_claim(batch, nullptr, &takes);
    return claim_results(plans, batch, claimed.answers,
                         stored_messages(plans, claimed.new_messages));
  }
  // With policy, the plans as claimed are the users' contacts filled in: read, like the
  // counters, inside the transaction (and again if it reruns). Copied only when a user of the
  // batch has a stored profile.
  auto policy = read_admission(plans);
  std::vector<domain::message_plan> addressed;
  const std::vector<domain::message_plan>* claimed_plans = &plans;
  if (policy.knows_users()) {
    addressed = plans;
    domain::fill_contacts(addressed, policy);
    claimed_plans = &addressed;
  }
  const claim_batch batch(dialect_, *claimed_plans);
  auto claimed = run_claim(batch, &policy, &takes);
  return claim_results(*claimed_plans, batch, claimed.answers,
                       stored_messages(*claimed_plans, claimed.new_messages));
}

namespace {

// A fallback policy will not let through: the user gets nothing on it, so the chain goes on.
bool refused_by_policy(const claim_outcome& outcome) {
  return outcome.state == domain::task_state::suppressed && outcome.policy_reason.has_value();
}

// A fallback this claim created, to be sent (now, or when policy's deferral ends).
bool newly_sendable(const claim_outcome& outcome) {
  return outcome.created && outcome.state != domain::task_state::suppressed;
}

// Thrown inside a failover transaction to roll it back: the fallback's task was there already.
struct fallback_task_exists {};
// Thrown inside a failover transaction to roll it back: no fallback this failover creates would
// be sent, and the task can still wait for its own channel.
struct fallbacks_refused {};

} // namespace

failover_result sql_task_store::fail_over(const state_change& change,
                                          const std::vector<attempt_record>& attempts,
                                          const domain::delivery& failed,
                                          const fallback_routes& routes) {
  auto first = domain::first_fallback_plan(
      failed, domain::fallback_chain(routes.fallback_of, failed.channel), routes.secret, change.at);
  if (!first)
    return {failover_result::outcome::no_fallback, false, {}};
  const apply_batch changes(dialect_, {change}, attempts);
  const std::vector<domain::message_plan> plans{std::move(*first)};
  std::optional<std::vector<fallback_link>> chain;
  bool again = false;
  try {
    chain = in_transaction("fail_over", [&]() -> std::optional<std::vector<fallback_link>> {
      // The fallback is judged like any new task (a user's DND, opt-outs, caps); the user
      // lock comes first, before this transaction holds any task row.
      std::optional<domain::admission> policy;
      if (options_.policy)
        policy.emplace(read_admission(plans));
      // The same failover sent again after its answer was lost: the fallback tasks found
      // below are the ones that first commit created, not tasks of their own.
      again = change.lease_token &&
              !statements_
                   ->fetch("SELECT id FROM tasks WHERE id = :id AND status = :to AND lease_token = "
                           ":token",
                           {change.task_id, state_text(change.to), *change.lease_token}, 1)
                   .empty();
      const auto applied_in = run_changes(changes);
      if (applied_in.at(0).count(change.task_id) == 0)
        return std::nullopt; // the task moved on: nothing written, nothing claimed
      run_attempts(changes, applied_in);
      note_entered(change.task_id, change.to, change.at);
      auto chains = claim_fallback_chains(plans, {failed.channel}, routes,
                                          policy ? &*policy : nullptr, change.at, again);
      auto& links = chains.at(0);
      const auto& first_link = links.front().claim.tasks.front();
      if (!first_link.created && !refused_by_policy(first_link))
        throw fallback_task_exists{}; // giving the task up would send nothing: roll back
      // A task never tried may still go on its own channel once the circuit closes: it leaves
      // only for a fallback this failover creates and will send.
      if (change.to == domain::task_state::suppressed && !again &&
          !newly_sendable(links.back().claim.tasks.front()))
        throw fallbacks_refused{};
      return std::move(links);
    });
  } catch (const fallback_task_exists&) {
    return {failover_result::outcome::fallback_exists, false, {}};
  } catch (const fallbacks_refused&) {
    return {failover_result::outcome::fallbacks_refused, false, {}};
  }
  if (!chain)
    return {failover_result::outcome::moved_on, false, {}};
  return {failover_result::outcome::failed_over, again, std::move(*chain)};
}

namespace {

bool on_chain(const std::vector<fallback_link>& chain, const std::string& channel) {
  return std::any_of(chain.begin(), chain.end(), [&](const fallback_link& link) {
    return link.claim.tasks.front().channel == channel;
  });
}

} // namespace

// Claims each plan (the first fallback of a task failed on `failed_channels`, in order) inside
// the open transaction and, while policy refuses a chain's last link (SUPPRESSED with a
// policy reason: an opt-out, DND, no contact — created so now, or found so), the next channel
// along that link's chain the message has an address for, a batch per step. A chain ends with
// a task that will be sent, another task that existed already (its channel has its own task
// for the message, or the chain came round), or a refused link with nowhere left to go.
// `again`: the same failover committed before (its answer was lost), so the first link found
// is the one that commit created; tasks further along count as found (the store writer
// counted and dispatched what that commit created).
std::vector<std::vector<fallback_link>> sql_task_store::claim_fallback_chains(
    std::vector<domain::message_plan> plans, const std::vector<std::string>& failed_channels,
    const fallback_routes& routes, domain::admission* policy, domain::timestamp now, bool again) {
  std::vector<std::vector<fallback_link>> chains(plans.size());
  std::vector<std::size_t> growing(plans.size()); // the chain each of `plans` extends
  for (std::size_t i = 0; i < growing.size(); ++i)
    growing[i] = i;
  for (bool first_step = true; !plans.empty(); first_step = false) {
    const claim_batch batch(dialect_, plans);
    auto claimed = run_claim(batch, policy);
    if (again && first_step)
      for (auto& answer : claimed.answers)
        answer.created = true;
    auto results =
        claim_results(plans, batch, claimed.answers, stored_messages(plans, claimed.new_messages));
    std::vector<domain::message_plan> next_plans;
    std::vector<std::size_t> next_growing;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      auto& link = chains[growing[i]].emplace_back(
          fallback_link{std::move(plans[i]), std::move(results[i])});
      const auto& outcome = link.claim.tasks.front();
      if (!refused_by_policy(outcome))
        continue;
      // Onwards from the refused channel, never back to a channel this chain has been on.
      auto onwards = domain::fallback_chain(routes.fallback_of, outcome.channel);
      onwards.erase(std::remove_if(onwards.begin(), onwards.end(),
                                   [&](const std::string& channel) {
                                     return channel == failed_channels[growing[i]] ||
                                            on_chain(chains[growing[i]], channel);
                                   }),
                    onwards.end());
      auto refused = domain::make_delivery(link.claim.message, link.plan.tasks.front());
      if (auto next = domain::first_fallback_plan(refused, onwards, routes.secret, now)) {
        next_plans.push_back(std::move(*next));
        next_growing.push_back(growing[i]);
      }
    }
    plans = std::move(next_plans);
    growing = std::move(next_growing);
  }
  return chains;
}

// For tasks that just became UNDELIVERED: claims the fallback channel's task for each whose
// channel has one (domain::fallback_plan: the same task that channel would have had if asked
// directly), inside the open transaction. Returns the fallback tasks it created, by failed
// task id (a fallback channel with a task of its own already gets nothing new to send).
std::unordered_map<std::string, created_fallback>
sql_task_store::claim_fallbacks(const std::vector<std::string>& undelivered,
                                const fallback_routes& failover, domain::timestamp now) {
  std::unordered_map<std::string, created_fallback> created;
  if (undelivered.empty() || failover.fallback_of.empty())
    return created;
  const std::string query = "SELECT " + delivery_columns + " FROM " +
                            dialect_.json_rows("ids", id_columns) +
                            " JOIN tasks t ON t.id = r.task_id JOIN messages m ON m.id = "
                            "t.message_id";
  std::vector<std::string> failed_ids;
  std::vector<std::string> failed_channels;
  std::vector<domain::message_plan> plans;
  for (const auto& row :
       statements_->fetch(query, {id_json_rows(dialect_, undelivered)}, delivery_column_count)) {
    auto failed = delivery_of(row);
    if (auto plan = domain::first_fallback_plan(
            failed, domain::fallback_chain(failover.fallback_of, failed.channel), failover.secret,
            now)) {
      failed_ids.push_back(failed.task_id);
      failed_channels.push_back(failed.channel);
      plans.push_back(std::move(*plan));
    }
  }
  if (plans.empty())
    return created;
  // Judged like any new task (a user's DND, opt-outs, caps). The user lock is taken while
  // this transaction holds task rows: a claim waiting on one of them while holding the lock
  // is a deadlock PostgreSQL breaks, and the transaction reruns.
  std::optional<domain::admission> policy;
  if (options_.policy)
    policy.emplace(read_admission(plans));
  const auto chains = claim_fallback_chains(std::move(plans), failed_channels, failover,
                                            policy ? &*policy : nullptr, now, false);
  for (std::size_t i = 0; i < failed_ids.size(); ++i) {
    const auto& last = chains[i].back();
    if (const auto& outcome = last.claim.tasks.front(); outcome.created && !outcome.policy_reason)
      created.emplace(
          failed_ids[i],
          created_fallback{failed_ids[i], failed_channels[i],
                           domain::make_delivery(last.claim.message, last.plan.tasks.front())});
  }
  return created;
}

// The claimed messages as stored, by id (the content a created task must be sent with): those
// the claim wrote itself (`written_now`) as their first plan has them, the others read back
// (their first accepted version may differ from every plan here).
std::unordered_map<std::string, domain::message_record>
sql_task_store::stored_messages(const std::vector<domain::message_plan>& plans,
                                const std::unordered_set<std::string>& written_now) {
  const std::string query = "SELECT " + message_select_columns + " FROM " +
                            dialect_.json_rows("ids", id_columns) +
                            " JOIN messages m ON m.id = r.task_id";
  json_batch ids(dialect_, id_columns);
  std::unordered_set<std::string_view> asked;
  std::unordered_map<std::string, domain::message_record> stored;
  for (const auto& plan : plans) {
    if (!asked.insert(plan.message.id).second)
      continue;
    if (written_now.count(plan.message.id) != 0) {
      // Written from its first plan (claim_batch): a later plan of the same message in this
      // batch (another channel, other content) is answered with what was stored.
      stored.emplace(plan.message.id, plan.message);
      continue;
    }
    ids.add_row();
    ids.text(plan.message.id);
  }
  if (ids.empty())
    return stored;
  for (const auto& row : statements_->fetch(query, {ids.finish()}, message_column_count)) {
    auto record = message_of(row);
    stored.emplace(record.id, std::move(record));
  }
  return stored;
}

} // namespace herald::persistence
