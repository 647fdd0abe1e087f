// claim_bench: how many task rows per second task_store::claim writes, by batch size; and
// with --apply, how many tasks per second apply() moves PENDING -> SENDING -> SENT (two
// transactions per batch, as a channel commits them), without and with status events (the
// outbox row written with each SENT change).
//
//   claim_bench [--tasks N] [--batch SIZE]... [--apply] [URL...]
//
// With no URL: a SQLite file in a temporary folder, plus $HERALD_TEST_POSTGRES_URL when set
// (scripts/with-postgres.sh build/bench/claim_bench). Each batch size claims N new keys
// (one message, one task each), then claims the same keys again (all duplicates).
#include "domain/keys.hpp"
#include "domain/message.hpp"
#include "domain/status_event.hpp"
#include "persistence/task_store.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <vector>

using namespace herald;

namespace {

const domain::id_secret bench_secret{"claim-bench-installation"};

domain::message_plan plan_for(const std::string& run, std::size_t i) {
  domain::message_plan plan;
  auto& m = plan.message;
  m.key = domain::message_key{"bench", "ORDER_SHIPPED", run + "-" + std::to_string(i), "u-1"};
  m.id = domain::message_id_for(m.key, bench_secret);
  m.title = "Shipped";
  m.body = "Order " + m.key.biz_id + " shipped";
  m.trace_id = "trace";
  m.created_at = domain::from_unix_micros(1'790'000'000'000'000);
  plan.tasks.push_back(domain::task_of(m.key, "sms", "+8613800000000", bench_secret));
  return plan;
}

/// Rows per second of wall time, and per second of this process's CPU time: the machine is
/// shared, so wall time also counts other programs; CPU time does not, but leaves out the
/// PostgreSQL server's work.
struct rate {
  double wall = 0;
  double cpu = 0;
};

rate claim_all(persistence::task_store& store, const std::vector<domain::message_plan>& plans,
               std::size_t batch_size, bool expect_created) {
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  std::size_t wrong = 0;
  for (std::size_t at = 0; at < plans.size(); at += batch_size) {
    std::vector<domain::message_plan> batch(
        plans.begin() + static_cast<std::ptrdiff_t>(at),
        plans.begin() + static_cast<std::ptrdiff_t>(std::min(at + batch_size, plans.size())));
    for (const auto& result : store.claim(batch))
      for (const auto& task : result.tasks)
        wrong += task.created != expect_created ? 1 : 0;
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  if (wrong != 0)
    std::cerr << "  " << wrong << " answers were not " << (expect_created ? "created" : "duplicate")
              << "\n";
  const auto rows = static_cast<double>(plans.size());
  return rate{rows / took.count(), cpu > 0 ? rows / cpu : 0};
}

// Moves the (claimed) tasks of `plans` PENDING -> SENDING -> SENT, `batch_size` per pair of
// transactions.
rate apply_all(persistence::task_store& store, const std::vector<domain::message_plan>& plans,
               std::size_t batch_size) {
  const auto start = std::chrono::steady_clock::now();
  const std::clock_t cpu_start = std::clock();
  std::size_t wrong = 0;
  const auto at = domain::from_unix_micros(1'790'000'001'000'000);
  for (std::size_t first = 0; first < plans.size(); first += batch_size) {
    std::vector<persistence::state_change> sending;
    std::vector<persistence::state_change> sent;
    for (std::size_t i = first; i < std::min(first + batch_size, plans.size()); ++i) {
      persistence::state_change c;
      c.task_id = plans[i].tasks[0].id;
      c.from = domain::task_state::pending;
      c.to = domain::task_state::sending;
      c.at = at;
      sending.push_back(c);
      c.from = domain::task_state::sending;
      c.to = domain::task_state::sent;
      c.attempts = 1;
      sent.push_back(c);
    }
    wrong += sending.size() - store.apply(sending, {}).size();
    wrong += sent.size() - store.apply(sent, {}).size();
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const double cpu = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  if (wrong != 0)
    std::cerr << "  " << wrong << " changes did not apply\n";
  const auto rows = static_cast<double>(plans.size());
  return rate{rows / took.count(), cpu > 0 ? rows / cpu : 0};
}

} // namespace

int main(int argc, char** argv) {
  std::size_t tasks = 10000;
  std::vector<std::string> urls;
  std::vector<std::size_t> batch_sizes;
  bool apply = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--apply")
      apply = true;
    else if (arg == "--tasks" && i + 1 < argc)
      tasks = std::stoul(argv[++i]);
    else if (arg == "--batch" && i + 1 < argc)
      batch_sizes.push_back(std::stoul(argv[++i]));
    else
      urls.push_back(arg);
  }
  std::filesystem::path folder;
  if (urls.empty()) {
    folder = std::filesystem::temp_directory_path() /
             ("herald-claim-bench-" + std::to_string(std::random_device{}()));
    urls.push_back("sqlite:" + (folder / "bench.db").string());
    if (const char* pg = std::getenv("HERALD_TEST_POSTGRES_URL"); pg && *pg)
      urls.push_back(pg);
  }

  if (batch_sizes.empty())
    batch_sizes = {1, 100, 1000};

  int status = 0;
  for (const auto& text : urls) {
    try {
      const auto url = persistence::parse_database_url(text);
      auto store = persistence::open_task_store(url, true);
      std::cout << url.text << "\n";
      const std::string run = std::to_string(std::random_device{}());
      for (std::size_t batch_size : batch_sizes) {
        // Batch size 1 is one transaction per task: fewer rows keep the run short.
        const std::size_t count = batch_size == 1 ? std::min<std::size_t>(tasks, 2000) : tasks;
        std::vector<domain::message_plan> plans;
        for (std::size_t i = 0; i < count; ++i)
          plans.push_back(plan_for(run + "-b" + std::to_string(batch_size), i));
        const rate created = claim_all(*store, plans, batch_size, true);
        const rate duplicate = claim_all(*store, plans, batch_size, false);
        std::printf("  batch %5zu: %9.0f new rows/s  %9.0f duplicate answers/s  (%zu tasks; per "
                    "client CPU second: %.0f new, %.0f duplicate)\n",
                    batch_size, created.wall, duplicate.wall, count, created.cpu, duplicate.cpu);
        if (!apply)
          continue;
        // Half the tasks each way, alternating halves so neither side gets the warmer cache.
        auto with_events = persistence::open_task_store(
            url, false, persistence::store_options::writing_events(domain::event_states_for({})));
        const auto half = static_cast<std::ptrdiff_t>(plans.size() / 2);
        const std::vector<domain::message_plan> first(plans.begin(), plans.begin() + half);
        const std::vector<domain::message_plan> second(plans.begin() + half, plans.end());
        const rate plain = apply_all(*store, first, batch_size);
        const rate evented = apply_all(*with_events, second, batch_size);
        std::printf("  batch %5zu: apply %9.0f tasks/s without events, %9.0f with (per client "
                    "CPU second: %.0f, %.0f)\n",
                    batch_size, plain.wall, evented.wall, plain.cpu, evented.cpu);
      }
    } catch (const std::exception& e) {
      std::cerr << text << ": " << e.what() << "\n";
      status = 1;
    }
  }
  if (!folder.empty())
    std::filesystem::remove_all(folder);
  return status;
}
