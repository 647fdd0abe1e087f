#pragma once

// A fake provider (src/tools) behind a real server: the HTTP/1.1 test server, or the h2c
// server for providers that speak nothing but HTTP/2. The adapters under test talk to it over
// loopback exactly as they would to the provider.

#include "support/test_http_server.hpp"
#include "tools/fake_exchange.hpp"
#include "tools/h2c_server.hpp"

#include <memory>

namespace herald::test {

inline reply::ending ending_of(tools::fake_ending ending) {
  switch (ending) {
  case tools::fake_ending::cut:
    return reply::ending::cut;
  case tools::fake_ending::dropped:
    return reply::ending::dropped;
  case tools::fake_ending::garbage:
    return reply::ending::garbage;
  case tools::fake_ending::complete:
    break;
  }
  return reply::ending::complete;
}

template <class Fake> std::unique_ptr<test_server> serve(Fake& fake) {
  return std::make_unique<test_server>([&fake](const recorded_request& seen) {
    tools::fake_request request{seen.method, seen.target, seen.body};
    request.headers.assign(seen.headers.begin(), seen.headers.end());
    const auto answer = fake.handle(request);
    reply out;
    out.status = answer.status;
    out.headers = {{"Content-Type", answer.content_type}};
    out.headers.insert(out.headers.end(), answer.headers.begin(), answer.headers.end());
    out.body = answer.body;
    out.hang = answer.hang;
    out.end = ending_of(answer.ending);
    return out;
  });
}

/// The fake behind an HTTP/2 server with prior knowledge (APNs).
template <class Fake> std::unique_ptr<tools::h2c_server> serve_h2c(Fake& fake) {
  return std::make_unique<tools::h2c_server>(
      [&fake](const tools::fake_request& request) { return fake.handle(request); });
}

} // namespace herald::test
