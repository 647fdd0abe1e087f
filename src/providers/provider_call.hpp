#pragma once

#include "observability/metrics.hpp"
#include "providers/answer_class.hpp"
#include "providers/http_client.hpp"
#include "providers/provider.hpp"
#include "providers/token_cache.hpp"

#include <functional>
#include <memory>
#include <string>

namespace herald::providers {

/// How the adapters that hold a provider token (WeChat, FCM, APNs) make their calls: with the
/// token, once more with a new one when the provider refuses it, classified, and told to the
/// channel.

/// Makes `call` on `client` and answers `classified` once: with `classify(answer)` when the
/// provider answered (provider_answered, failure_class.hpp), with classify_unanswered when the
/// answer was lost.
void call_provider(http_client& client, outbound_call call,
                   std::function<classified_answer(const outbound_answer&)> classify,
                   std::function<void(classified_answer)> classified);

/// Makes one provider call with a token: `send(token, answered)` calls the provider and
/// answers with the classified result.
using token_send =
    std::function<void(const std::string& token, std::function<void(classified_answer)> answered)>;

/// One call with the shared token, as every token-holding adapter makes it: the provider
/// refusing the token (token_invalid) makes it stale, a new one is fetched (once for all the
/// calls refused with that token) and the call made again at once, once. A new token refused as
/// well leaves the answer (retryable) to the retry policy instead of looping. `done` gets the
/// final answer, or why there was no token (config_error set when the credentials were refused).
/// `on_refused(token)` replaces `tokens.invalidate(token)` for providers that must know which
/// token was refused (WeChat forces a refresh if it is handed out again). `tokens` must outlive
/// every call (the adapters' accounts stop their HTTP client first).
void call_with_token(token_cache& tokens, token_send send,
                     std::function<void(classified_answer)> done,
                     std::function<void(const std::string&)> on_refused = {});

/// What the channel is told of a verdict: its result, once
/// herald_provider_config_errors_total{channel} is raised if the verdict blames the
/// configuration.
std::function<void(classified_answer)>
tell_channel(std::string channel, std::shared_ptr<metrics> counters, provider_callback done);

} // namespace herald::providers
