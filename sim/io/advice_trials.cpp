// advise's what-ifs as `gradsync run` worker processes (advice_trials.hpp).
#include "gradsync/io/advice_trials.hpp"

#include <optional>
#include <utility>

#include "../sweep/worker_pool.hpp"
#include "gradsync/report/advise_report.hpp"

namespace gradsync {
namespace {

std::string first_line(std::string text) {
  const auto nl = text.find('\n');
  if (nl != std::string::npos) text.resize(nl);
  return text;
}

}  // namespace

struct AdviceTrialRunner::Workers {
  Workers(const std::string& program, std::chrono::milliseconds limit) : pool(program, limit) {}
  sweep::WorkerPool pool;
};

AdviceTrialRunner::AdviceTrialRunner(AdviceTrialOptions options)
    : options_(std::move(options)), limit_(sweep::parse_worker_limit(options_.timeout)) {
  if (options_.jobs == 0) options_.jobs = sweep::available_cpus();
  workers_ = std::make_unique<Workers>(options_.program, limit_);
}

AdviceTrialRunner::~AdviceTrialRunner() = default;

std::size_t AdviceTrialRunner::runs() const { return done_; }

std::vector<AdviceTrial> AdviceTrialRunner::run(
    const std::vector<std::vector<std::string>>& batch) {
  sweep::WorkerPool& pool = workers_->pool;
  std::vector<AdviceTrial> out(batch.size());
  std::size_t next = 0, finished = 0;
  while (finished < batch.size()) {
    while (next < batch.size() && pool.running() < options_.jobs) {
      pool.start(next, "gradsync",
                 advice_run_args(options_.scenario, options_.sets, batch[next], options_.cfg));
      ++next;
    }
    for (const sweep::WorkerResult& w : pool.collect(std::chrono::milliseconds(250))) {
      // `run` reports bad input on one line.
      if (const auto failure = sweep::worker_failure(w, limit_))
        out[w.tag] = AdviceTrial{std::nullopt, first_line(*failure)};
      else
        out[w.tag] = advice_trial_from_run_output(w.out);
      ++finished;
      ++done_;
    }
    if (options_.on_progress) options_.on_progress(done_, pool.running());
  }
  return out;
}

}  // namespace gradsync
