#include "providers/inapp_provider.hpp"

#include "domain/masking.hpp"
#include "observability/log.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <unordered_set>
#include <utility>

namespace herald::providers {
namespace {

/// One send waiting for its item to be written.
struct queued_send {
  std::string task_id;
  provider_callback done;
};

void answer(provider_callback& done, provider_result result) {
  try {
    done(std::move(result));
  } catch (const std::exception& e) {
    log::error("provider.callback_threw", {{"error", domain::mask_free_text(e.what())}});
  } catch (...) {
    log::error("provider.callback_threw", {{"error", "unknown exception"}});
  }
}

} // namespace

std::string inapp_config::validate() const {
  if (batch_max == 0 || batch_max > 10000)
    return "inapp batch_max must be between 1 and 10000";
  return {};
}

struct inapp_provider::writer {
  inapp_config config;
  inbox_write write;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<queued_send> queue; ///< guarded by mutex
  bool stopping = false;         ///< guarded by mutex
  std::thread thread;

  void run() {
    for (;;) {
      std::vector<queued_send> batch;
      {
        std::unique_lock<std::mutex> lock{mutex};
        wake.wait(lock, [this] { return stopping || !queue.empty(); });
        if (stopping)
          break;
        const auto take = std::min(queue.size(), config.batch_max);
        std::move(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(take),
                  std::back_inserter(batch));
        queue.erase(queue.begin(), queue.begin() + static_cast<std::ptrdiff_t>(take));
      }
      write_batch(batch);
    }
    std::deque<queued_send> left;
    {
      std::lock_guard<std::mutex> guard{mutex};
      left.swap(queue);
    }
    for (auto& send : left)
      answer(send.done, {call_outcome::timeout, "adapter stopped", std::nullopt});
  }

  void write_batch(std::vector<queued_send>& batch) {
    std::vector<std::string> ids;
    ids.reserve(batch.size());
    for (const auto& send : batch)
      ids.push_back(send.task_id);
    std::unordered_set<std::string> written;
    std::string failure;
    try {
      for (auto& id : write(ids))
        written.insert(std::move(id));
    } catch (const std::exception& e) {
      failure = domain::mask_free_text(std::string{"inbox write failed: "} + e.what());
    } catch (...) {
      failure = "inbox write failed: unknown exception";
    }
    if (!failure.empty())
      log::warn("inapp.write_failed",
                {{"items", std::to_string(batch.size())}, {"error", failure}});
    for (auto& send : batch) {
      if (!failure.empty()) // rolled back, or committed with the answer lost: a resend is safe
        answer(send.done, {call_outcome::retryable, failure, std::nullopt});
      else if (written.count(send.task_id) != 0)
        answer(send.done, {call_outcome::success, send.task_id, std::nullopt});
      else
        answer(send.done, {call_outcome::permanent, "no such task in the database", std::nullopt});
    }
  }
};

inapp_provider::inapp_provider(inapp_config config, inbox_write write)
    : writer_(std::make_unique<writer>()) {
  if (auto problem = config.validate(); !problem.empty())
    throw std::invalid_argument(problem);
  if (!write)
    throw std::invalid_argument("inapp: no inbox writer");
  writer_->config = config;
  writer_->write = std::move(write);
  writer_->thread = std::thread([state = writer_.get()] { state->run(); });
}

inapp_provider::~inapp_provider() {
  {
    std::lock_guard<std::mutex> guard{writer_->mutex};
    writer_->stopping = true;
  }
  writer_->wake.notify_all();
  writer_->thread.join();
}

void inapp_provider::send(provider_request request, provider_callback done) {
  if (!done)
    return;
  {
    std::lock_guard<std::mutex> guard{writer_->mutex};
    if (!writer_->stopping) {
      writer_->queue.push_back({std::move(request.task_id), std::move(done)});
      writer_->wake.notify_one();
      return;
    }
  }
  answer(done, {call_outcome::timeout, "adapter stopped", std::nullopt});
}

} // namespace herald::providers
