#include "tools/sim_provider_receipts.hpp"

#include "domain/time.hpp"
#include "providers/webhook_signature.hpp"
#include "tools/http_client.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <boost/json.hpp>

namespace herald::tools {

namespace json = boost::json;
using std::chrono::milliseconds;
using steady = std::chrono::steady_clock;

namespace {

constexpr milliseconds first_backoff{100};
constexpr milliseconds max_backoff{5000};

/// Draws per receipt slot, used or not, so one message's plan never shifts the next one's.
constexpr int draws_per_receipt = 7;

milliseconds jitter(milliseconds bound, double u) {
  return milliseconds(static_cast<milliseconds::rep>(static_cast<double>(bound.count()) * u));
}

/// Appends the copies of one receipt and counts it into `plan`. `u` holds its draws.
void plan_one(const receipt_profile& profile, bool answer_sent, const std::string& status,
              milliseconds occurred, const std::array<double, draws_per_receipt>& u,
              receipt_plan& plan) {
  ++plan.receipts;
  if (u[0] < profile.drop_rate) {
    ++plan.dropped;
    return;
  }
  unsigned count = 1;
  if (u[1] < profile.duplicate_rate) {
    ++plan.duplicated;
    count = u[2] < 0.5 ? 2 : 3;
  }
  // After a lost answer herald may hold another message id for this request (a resend's), so
  // such receipts name the request id alone.
  auto naming = !answer_sent  ? receipt_naming::request_id
                : u[3] < 0.5  ? receipt_naming::both
                : u[3] < 0.75 ? receipt_naming::request_id
                              : receipt_naming::message_id;
  for (unsigned c = 0; c < count; ++c)
    plan.copies.push_back(
        receipt_copy{status, occurred + jitter(profile.reorder, u[4 + c]), occurred, naming});
}

bool retried(int status) {
  return status == 0 || status == 404 || status == 408 || status == 429 || status >= 500;
}

/// A channel name as one path segment.
std::string path_segment(std::string_view text) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

std::int64_t unix_seconds(std::chrono::system_clock::time_point at) {
  return std::chrono::duration_cast<std::chrono::seconds>(at.time_since_epoch()).count();
}

} // namespace

std::string_view to_string(receipt_naming naming) {
  switch (naming) {
  case receipt_naming::both:
    return "both";
  case receipt_naming::request_id:
    return "request_id";
  case receipt_naming::message_id:
    return "message_id";
  }
  return "both";
}

receipt_plan plan_receipts(const receipt_profile& profile, bool answer_sent,
                           std::mt19937_64& random) {
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  const double outcome_draw = uniform(random);
  const double read_draw = uniform(random);
  std::array<std::array<double, draws_per_receipt>, 2> slots{};
  for (auto& slot : slots)
    for (auto& u : slot)
      u = uniform(random);

  receipt_plan plan;
  plan.outcome = outcome_draw < profile.undelivered_rate ? "undelivered" : "delivered";
  plan.outcome_after = profile.delay;
  plan_one(profile, answer_sent, plan.outcome, plan.outcome_after, slots[0], plan);
  if (plan.outcome == "delivered" && read_draw < profile.read_rate) {
    plan.read = true;
    plan.read_after = profile.delay * 2;
    plan_one(profile, answer_sent, "read", plan.read_after, slots[1], plan);
  }
  std::stable_sort(plan.copies.begin(), plan.copies.end(),
                   [](const receipt_copy& a, const receipt_copy& b) { return a.after < b.after; });
  return plan;
}

std::string receipt_body(std::string_view request_id, std::string_view message_id,
                         receipt_naming naming, std::string_view status,
                         std::chrono::system_clock::time_point occurred_at) {
  json::object data;
  if (naming != receipt_naming::message_id)
    data["provider_request_id"] = request_id;
  if (naming != receipt_naming::request_id)
    data["provider_message_id"] = message_id;
  data["status"] = status;
  data["occurred_at"] = domain::format_rfc3339(occurred_at);
  data["detail"] = status == "undelivered" ? "sim-provider: handset unreachable" : "sim-provider";
  return json::serialize(json::object{{"type", "herald.receipt"}, {"data", std::move(data)}});
}

std::string_view delivery_truth::status_at(std::chrono::system_clock::time_point now) const {
  if (read_at && now >= *read_at)
    return "read";
  if (now >= outcome_at)
    return outcome;
  return "accepted";
}

bool delivery_book::add(const std::string& request_id, delivery_truth truth) {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_.emplace(request_id, std::move(truth)).second;
}

bool delivery_book::contains(const std::string& request_id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return requests_.count(request_id) != 0;
}

std::optional<std::string>
delivery_book::status_of(const std::string& request_id,
                         std::chrono::system_clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = requests_.find(request_id);
  if (found == requests_.end())
    return std::nullopt;
  return std::string(found->second.status_at(now));
}

void delivery_book::receipt_finished(const std::string& request_id, bool acknowledged) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = requests_.find(request_id);
  if (found == requests_.end()) // forgotten by a reset meanwhile
    return;
  auto& truth = found->second;
  if (truth.receipts_outstanding > 0)
    --truth.receipts_outstanding;
  if (acknowledged)
    ++truth.receipts_acknowledged;
}

delivery_tally delivery_book::tally(std::chrono::system_clock::time_point now) const {
  delivery_tally tally;
  for (auto status : {"accepted", "delivered", "read", "undelivered"})
    tally.statuses[status] = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  tally.requests = requests_.size();
  for (const auto& [id, truth] : requests_) {
    ++tally.statuses[std::string(truth.status_at(now))];
    if (truth.receipts_outstanding > 0)
      ++tally.receipts_pending;
    else if (truth.receipts_acknowledged == 0)
      ++tally.without_receipt;
  }
  return tally;
}

void delivery_book::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  requests_.clear();
}

std::string to_json(const receipt_counts& counts) {
  json::object by_status;
  for (const auto& [status, n] : counts.acknowledged_by_status)
    by_status[status] = n;
  json::object answers;
  for (const auto& [status, n] : counts.answers)
    answers[std::to_string(status)] = n;
  return json::serialize(json::object{{"planned", counts.planned},
                                      {"dropped", counts.dropped},
                                      {"duplicated", counts.duplicated},
                                      {"copies", counts.copies},
                                      {"posts", counts.posts},
                                      {"acknowledged", counts.acknowledged},
                                      {"retries", counts.retries},
                                      {"failed", counts.failed},
                                      {"refused", counts.refused},
                                      {"overflow", counts.overflow},
                                      {"queued", counts.queued},
                                      {"max_lag_ms", counts.max_lag_ms},
                                      {"acknowledged_by_status", std::move(by_status)},
                                      {"answers", std::move(answers)}});
}

receipt_sender::receipt_sender(const receipt_profile& profile, finished_fn on_finished)
    : profile_(profile), key_(providers::decode_webhook_secret(profile.secret).value_or("")),
      on_finished_(std::move(on_finished)),
      // Unique across restarts of the provider, so herald never takes a new receipt for a
      // replay of an old one.
      id_prefix_("msg_sim" + std::to_string(unix_seconds(std::chrono::system_clock::now())) + "_") {
  threads_.reserve(profile_.concurrency);
  for (unsigned t = 0; t < profile_.concurrency; ++t)
    threads_.emplace_back([this] { run(); });
}

receipt_sender::~receipt_sender() {
  shutdown();
}

void receipt_sender::submit(const receipt_plan& plan, const std::string& channel,
                            const std::string& request_id, const std::string& message_id,
                            steady::time_point accepted,
                            std::chrono::system_clock::time_point accepted_at) {
  std::size_t overflowed = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    counts_.planned += plan.receipts;
    counts_.dropped += plan.dropped;
    counts_.duplicated += plan.duplicated;
    for (const auto& copy : plan.copies) {
      if (queue_.size() + in_flight_ >= profile_.queue_limit) {
        ++counts_.overflow;
        ++overflowed;
        continue;
      }
      ++counts_.copies;
      queue_.push_back(queued_copy{accepted + copy.after,
                                   receipt_post{channel, request_id, message_id, copy.status,
                                                copy.naming, accepted_at + copy.occurred},
                                   id_prefix_ + std::to_string(next_id_++), 0});
      std::push_heap(queue_.begin(), queue_.end(), later_first{});
    }
  }
  wake_.notify_all();
  for (std::size_t i = 0; i < overflowed; ++i)
    on_finished_(request_id, false);
}

receipt_counts receipt_sender::counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto counts = counts_;
  counts.queued = queue_.size() + in_flight_;
  return counts;
}

void receipt_sender::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_.clear();
  counts_ = receipt_counts{};
}

void receipt_sender::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && threads_.empty())
      return;
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_)
    if (thread.joinable())
      thread.join();
  threads_.clear();
}

void receipt_sender::run() {
  http_client client(profile_.to->server, profile_.timeout);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (queue_.empty()) {
      wake_.wait(lock);
      continue;
    }
    auto due = queue_.front().due;
    if (due > steady::now()) {
      wake_.wait_until(lock, due);
      continue;
    }
    std::pop_heap(queue_.begin(), queue_.end(), later_first{});
    auto copy = std::move(queue_.back());
    queue_.pop_back();
    ++in_flight_;
    // How far the senders fall behind: a receipt posted late may meet the reconciler first.
    auto lag = std::chrono::duration_cast<milliseconds>(steady::now() - due).count();
    counts_.max_lag_ms =
        std::max<std::uint64_t>(counts_.max_lag_ms, static_cast<std::uint64_t>(lag));
    lock.unlock();
    int status = post(client, copy);
    lock.lock();
    --in_flight_;
    ++copy.attempt;
    ++counts_.posts;
    ++counts_.answers[status];
    if (status >= 200 && status < 300) {
      ++counts_.acknowledged;
      ++counts_.acknowledged_by_status[copy.post.status];
    } else if (retried(status) && copy.attempt < profile_.attempts) {
      ++counts_.retries;
      auto backoff = std::min(max_backoff, first_backoff * (1 << std::min(copy.attempt - 1, 6u)));
      copy.due = steady::now() + backoff;
      queue_.push_back(std::move(copy));
      std::push_heap(queue_.begin(), queue_.end(), later_first{});
      continue;
    } else {
      ++counts_.failed;
      if (!retried(status))
        ++counts_.refused;
    }
    // The book has its own lock; never call out while holding ours.
    lock.unlock();
    finish(copy, status);
    lock.lock();
  }
}

int receipt_sender::post(http_client& client, const queued_copy& copy) {
  const auto& p = copy.post;
  auto body = receipt_body(p.request_id, p.message_id, p.naming, p.status, p.occurred_at);
  auto now = unix_seconds(std::chrono::system_clock::now());
  header_fields headers{
      {"webhook-id", copy.webhook_id},
      {"webhook-timestamp", std::to_string(now)},
      {"webhook-signature", providers::sign_webhook(key_, copy.webhook_id, now, body)}};
  auto target = profile_.to->path_prefix + "/v1/receipts/" + path_segment(p.channel);
  try {
    return client.request("POST", target, body, headers).status;
  } catch (const std::exception&) { // connection_error, or anything else: the thread survives
    return 0;
  }
}

void receipt_sender::finish(const queued_copy& copy, int status) {
  on_finished_(copy.post.request_id, status >= 200 && status < 300);
}

} // namespace herald::tools
