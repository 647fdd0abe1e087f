#include "providers/provider_call.hpp"

#include "providers/failure_class.hpp"

#include <utility>

namespace herald::providers {

void call_provider(http_client& client, outbound_call call,
                   std::function<classified_answer(const outbound_answer&)> classify,
                   std::function<void(classified_answer)> classified) {
  client.call(std::move(call), [classify = std::move(classify),
                                classified = std::move(classified)](outbound_answer answer) {
    if (!provider_answered(answer))
      return classified(classified_answer{classify_unanswered(answer)});
    classified(classify(answer));
  });
}

namespace {

using refusal_hook = std::shared_ptr<const std::function<void(const std::string&)>>;

void call_once_more(token_cache& tokens, std::shared_ptr<const token_send> send,
                    refusal_hook refused, bool retried,
                    std::function<void(classified_answer)> done) {
  tokens.get(
      [&tokens, send, refused, retried, done = std::move(done)](token_or_failure token) mutable {
        if (auto* failure = std::get_if<token_failure>(&token)) {
          classified_answer verdict{std::move(failure->result)};
          verdict.config_error = failure->config_error;
          return done(std::move(verdict));
        }
        auto used = std::get<std::string>(std::move(token));
        (*send)(used, [&tokens, send, refused, retried, used,
                       done = std::move(done)](classified_answer verdict) mutable {
          if (!verdict.token_invalid || retried)
            return done(std::move(verdict));
          // The provider did nothing with this call: send it again with a new token, at once.
          if (*refused)
            (*refused)(used);
          else
            tokens.invalidate(used);
          call_once_more(tokens, send, refused, true, std::move(done));
        });
      });
}

} // namespace

void call_with_token(token_cache& tokens, token_send send,
                     std::function<void(classified_answer)> done,
                     std::function<void(const std::string&)> on_refused) {
  call_once_more(
      tokens, std::make_shared<const token_send>(std::move(send)),
      std::make_shared<const std::function<void(const std::string&)>>(std::move(on_refused)), false,
      std::move(done));
}

std::function<void(classified_answer)>
tell_channel(std::string channel, std::shared_ptr<metrics> counters, provider_callback done) {
  return [channel = std::move(channel), counters = std::move(counters),
          done = std::move(done)](classified_answer verdict) {
    if (verdict.config_error && counters)
      counters->provider_config_error(channel);
    done(std::move(verdict.result));
  };
}

} // namespace herald::providers
