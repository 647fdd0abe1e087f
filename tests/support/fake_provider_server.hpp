#pragma once

// A fake provider (src/tools) behind the real HTTP/1.1 test server: the adapters under test
// talk to it over loopback exactly as they would to the provider.

#include "support/test_http_server.hpp"
#include "tools/fake_provider.hpp"

#include <memory>

namespace herald::test {

template <class Fake> std::unique_ptr<test_server> serve(Fake& fake) {
  return std::make_unique<test_server>([&fake](const recorded_request& seen) {
    tools::fake_request request{seen.method, seen.target, seen.body, {}};
    request.headers.assign(seen.headers.begin(), seen.headers.end());
    const auto answer = fake.handle(request);
    reply out;
    out.status = answer.status;
    out.headers = {{"Content-Type", answer.content_type}};
    out.headers.insert(out.headers.end(), answer.headers.begin(), answer.headers.end());
    out.body = answer.body;
    out.hang = answer.hang;
    return out;
  });
}

} // namespace herald::test
