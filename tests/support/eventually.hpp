#pragma once

#include <chrono>
#include <thread>

namespace herald::test {

/// Polls `done` every 50 ms until it holds, at most `bound`; whether it held. For conditions
/// another process or thread brings about (never a sleep "long enough").
template <class Done>
bool eventually(Done done, std::chrono::milliseconds bound = std::chrono::seconds{30}) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds{50});
  }
  return true;
}

} // namespace herald::test
