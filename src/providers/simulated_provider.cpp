#include "providers/simulated_provider.hpp"

#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

namespace herald::providers {

namespace asio = boost::asio;

struct delay_scheduler::impl {
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  std::thread thread{[this] { io.run(); }};
};

delay_scheduler::delay_scheduler() : impl_(std::make_unique<impl>()) {}

delay_scheduler::~delay_scheduler() {
  impl_->work.reset();
  impl_->io.stop();
  impl_->thread.join();
}

void delay_scheduler::after(std::chrono::milliseconds delay, std::function<void()> what) {
  auto timer = std::make_shared<asio::steady_timer>(impl_->io, delay);
  timer->async_wait([timer, what = std::move(what)](const boost::system::error_code& ec) {
    if (!ec)
      what();
  });
}

simulated_provider::simulated_provider(simulated_profile profile,
                                       std::shared_ptr<delay_scheduler> delays)
    : profile_(profile), delays_(std::move(delays)), rng_(profile.seed) {}

provider_result simulated_provider::decide(const provider_request& request) {
  double roll = 0;
  {
    std::lock_guard<std::mutex> guard{mutex_};
    roll = std::uniform_real_distribution<double>{0.0, 1.0}(rng_);
  }
  if (roll < profile_.permanent_failure_rate)
    return {call_outcome::permanent, "simulated: recipient rejected", std::nullopt};
  if (roll < profile_.permanent_failure_rate + profile_.retryable_failure_rate)
    return {call_outcome::retryable, "simulated: provider busy", std::nullopt};
  return {call_outcome::success, "sim-" + request.provider_request_id, std::nullopt};
}

void simulated_provider::send(provider_request request, provider_callback done) {
  auto result = decide(request);
  if (profile_.latency.count() == 0 || !delays_) {
    done(std::move(result));
    return;
  }
  delays_->after(profile_.latency, [done = std::move(done), result = std::move(result)]() mutable {
    done(std::move(result));
  });
}

} // namespace herald::providers
