#include "app/stop_signals.hpp"

#include <pthread.h>

namespace herald::app {

namespace {

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

} // namespace

void block_stop_signals() {
  auto set = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::signal(SIGTERM, SIG_DFL);
  std::signal(SIGINT, SIG_DFL);
}

int wait_for_stop_signal() {
  auto set = stop_signal_set();
  int received = 0;
  if (sigwait(&set, &received) != 0)
    return SIGTERM;
  return received;
}

} // namespace herald::app
