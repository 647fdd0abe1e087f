#pragma once

#include "actors/cluster_share.hpp"
#include "actors/interfaces.hpp"
#include "actors/template_registry.hpp"
#include "api/service.hpp"
#include "domain/deadline_queue.hpp"
#include "persistence/zoneinfo.hpp"

#include <memory>
#include <optional>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include <caf/actor.hpp>
#include <caf/actor_clock.hpp>
#include <caf/fwd.hpp>
#include <caf/timespan.hpp>

namespace herald::app {

/// Where a node's cluster view comes from: its cluster member, or (a single node, `member`
/// null) the node alone.
struct node_cluster {
  actors::cluster_member_actor member;
  std::shared_ptr<const actors::cluster_share> share; ///< calls in flight on this node
  std::string node_id;
};

/// api::service over the node's actors: each call becomes one typed request, made by a
/// one-shot actor that calls the HTTP layer back with the answer, so HTTP threads never wait
/// on an actor and no callback travels in a message.
class actor_service final : public api::service {
public:
  /// `zones` answers known_time_zone (the one instance the stores also load zones from).
  /// `templates` serves the templates API and publishes `catalog`; `clock` stamps their changes.
  /// Asks the actors of `system`; an actor that has not answered after `answer_timeout` is
  /// answered for with 503.
  actor_service(caf::actor_system& system, caf::timespan answer_timeout,
                actors::ingest_actor ingest, actors::receipt_actor receipts,
                domain::routing_rules rules, domain::id_secret id_secret,
                std::shared_ptr<persistence::zoneinfo> zones,
                actors::template_registry_actor templates,
                std::shared_ptr<const actors::published_templates> catalog,
                std::shared_ptr<const domain::clock> clock, node_cluster cluster);

  /// Closes the service (also on destruction): no callback is called from then on, and every
  /// request still waiting for its answer is given up, so the actor system can stop at once.
  ~actor_service() override;
  void close();

  void cluster(std::function<void(domain::cluster_view)> done) override;

  const domain::routing_rules& rules() const override { return rules_; }

  const domain::id_secret& id_secret() const override { return id_secret_; }

  void submit(domain::message_plan plan,
              std::function<void(std::variant<persistence::claim_result, api::service_error>)> done)
      override;

  void submit_batch(
      std::vector<domain::message_plan> plans,
      std::function<void(std::variant<std::vector<persistence::claim_result>, api::service_error>)>
          done) override;

  void find_message(std::string tenant, std::string message_id,
                    std::function<void(
                        std::variant<std::optional<persistence::message_view>, api::service_error>)>
                        done) override;

  void list_dead_letters(
      std::string tenant, persistence::dead_letter_filter filter, std::string after_task_id,
      std::size_t limit,
      std::function<void(std::variant<std::vector<persistence::dead_letter>, api::service_error>)>
          done) override;

  void replay_dead_letter(
      std::string tenant, std::string task_id,
      std::function<void(std::variant<persistence::replay_result, api::service_error>)> done)
      override;

  void
  record_receipt(persistence::receipt_input receipt,
                 std::function<void(std::variant<persistence::receipt_outcome, api::service_error>)>
                     done) override;

  void admit_push(domain::push_seal seal,
                  std::function<void(std::variant<bool, api::service_error>)> done) override;

  void stats(persistence::stats_query which,
             std::function<void(std::variant<persistence::stats_report, api::service_error>)> done)
      override;

  void list_inbox(
      persistence::inbox_query which,
      std::function<void(std::variant<persistence::inbox_page, api::service_error>)> done) override;

  void find_inbox_item(
      std::string tenant, std::string task_id,
      std::function<void(std::variant<std::optional<persistence::inbox_item>, api::service_error>)>
          done) override;

  bool known_time_zone(const std::string& name) const override;

  void find_user(
      std::string tenant, std::string user_id,
      std::function<void(std::variant<std::optional<domain::user_profile>, api::service_error>)>
          done) override;

  void update_user(
      std::string tenant, std::string user_id, domain::user_patch patch,
      std::function<void(std::variant<domain::user_profile, api::service_error>)> done) override;

  std::shared_ptr<const domain::template_catalog> stored_templates() const override;

  void save_template(
      std::string tenant, std::string code, domain::template_definition definition,
      std::function<void(std::variant<domain::stored_template, api::service_error>)> done) override;

  void find_template(
      std::string tenant, std::string code, std::uint32_t version,
      std::function<void(std::variant<std::optional<domain::stored_template>, api::service_error>)>
          done) override;

  void delete_template(std::string tenant, std::string code,
                       std::function<void(std::variant<bool, api::service_error>)> done) override;

  void readiness(std::function<void(bool ready, std::string reason)> done) override;

private:
  /// The one-shot actors asking on the service's behalf, until it closes, and when each is
  /// due. Every ask has the same timeout, so deadlines come in the order asks enter: one
  /// timer (the deadline keeper's, armed for the oldest open ask) serves them all, where a
  /// request timeout per ask cost two wake-ups of CAF's clock thread per HTTP request.
  class open_asks {
  public:
    enum class entry { refused, entered, entered_first };
    /// Registers a new asker, due `timeout` from now on `clock` (read under the lock, so
    /// deadlines enter in order): refused once closed (the asker should end); entered_first
    /// when no deadline was pending, so the keeper must be armed.
    entry enter(const caf::actor& asker, caf::actor_clock& clock, caf::timespan timeout);
    void leave(caf::actor_id asker);
    /// Ends the askers whose deadline is past with `caf::sec::request_timeout` (they answer
    /// it); the deadline of the oldest ask still open, if any.
    std::optional<caf::actor_clock::time_point> expire(caf::actor_clock::time_point now);
    /// Ends every asker still waiting; from then on unless_closed calls nothing.
    void close();
    /// Calls `f` unless closed; close() waits for calls under way (so `f` must not close the
    /// service).
    template <class F> void unless_closed(F&& f) {
      std::shared_lock lock{mutex_};
      if (!closed_)
        f();
    }

  private:
    // Answered asks at the front are dropped at once, so it holds about the asks in flight.
    void forget_answered();

    std::shared_mutex mutex_;
    bool closed_ = false;
    std::unordered_map<caf::actor_id, caf::actor> askers_;
    domain::deadline_queue<caf::actor_clock::time_point, caf::actor_id> deadlines_;
  };

  template <class... Answer, class Handle, class Done, class... Args>
  void ask(const char* what, Handle target, Done done, Args... args) const;

  /// This node alone: its view when it has no cluster (or its member does not answer).
  domain::cluster_view lone_view() const;

  caf::actor_system& system_;
  caf::timespan answer_timeout_;
  actors::ingest_actor ingest_;
  actors::receipt_actor receipts_;
  domain::routing_rules rules_;
  domain::id_secret id_secret_;
  std::shared_ptr<persistence::zoneinfo> zones_;
  actors::template_registry_actor templates_;
  std::shared_ptr<const actors::published_templates> catalog_;
  std::shared_ptr<const domain::clock> clock_;
  node_cluster cluster_;
  std::shared_ptr<open_asks> asks_;
  caf::actor deadline_keeper_; ///< ends the asks past their deadline (open_asks::expire)
};

} // namespace herald::app
