#include "benchmarks/harness/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/str_format.h"

namespace perfscale {
namespace {

constexpr double kPlainInterval = 10;

size_t TerminalWidth(std::FILE* out) {
  struct winsize size = {};
  if (ioctl(fileno(out), TIOCGWINSZ, &size) == 0 && size.ws_col > 20) return size.ws_col;
  return 80;
}

}  // namespace

Progress::Progress(const std::vector<PlannedRun>& runs, std::FILE* out, bool live)
    : out_(out), live_(live), start_(std::chrono::steady_clock::now()) {
  for (const PlannedRun& run : runs) {
    estimates_[run.name] = run.estimate_seconds;
    planned_total_ += run.estimate_seconds;
  }
  total_ = static_cast<int>(runs.size());
}

double Progress::Elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

// The plan's estimate of what is left, scaled by how long the finished benchmarks took
// against their estimates (within 5x either way, so one outlier cannot swing it wildly).
// Before any finishes (the first, or interleaved repetitions, which all finish near the
// end), the plan's total less the time spent.
double Progress::EstimatedLeft() const {
  if (planned_done_ <= 0) return std::max(planned_total_ - Elapsed(), 0.0);
  double ratio = std::clamp(Elapsed() / planned_done_, 0.2, 5.0);
  return std::max(planned_total_ - planned_done_, 0.0) * ratio;
}

void Progress::Draw() {
  std::string line = absl::StrFormat("[%d/%d] %s elapsed, about %s left", done_, total_,
                                     FormatClock(Elapsed()), FormatClock(EstimatedLeft()));
  if (live_) {
    // A name that does not fit keeps its end: the parameters that tell runs apart.
    const size_t width = TerminalWidth(out_) - 1;
    if (!current_.empty() && line.size() + 2 + 8 < width) {
      const size_t room = width - line.size() - 2;
      line +=
          ": " + (current_.size() <= room ? current_
                                          : "..." + current_.substr(current_.size() - room + 3));
    }
    if (line.size() > width) line.resize(width);
    std::fprintf(out_, "\r\033[K%s", line.c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "progress: %s%s\n", line.c_str(),
                 current_.empty() ? "" : (" (" + current_ + ")").c_str());
    last_plain_ = Elapsed();
  }
  std::fflush(out_);
}

void Progress::Started(const std::string& name) {
  current_ = live_ ? name : "now: " + name;
  if (live_ || Elapsed() - last_plain_ >= kPlainInterval) Draw();
}

void Progress::Finished(const std::string& name) {
  if (!finished_.insert(name).second) return;
  ++done_;
  auto estimate = estimates_.find(name);
  if (estimate != estimates_.end()) planned_done_ += estimate->second;
  current_ = live_ ? "" : "last: " + name;
  if (live_ || Elapsed() - last_plain_ >= kPlainInterval) Draw();
}

void Progress::ClearLine() {
  if (live_ && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
    drawn_ = false;
  }
}

void Progress::Done() {
  ClearLine();
  std::fprintf(out_, "done: %d of %d benchmarks in %s (planned %s)\n", done_, total_,
               FormatClock(Elapsed()).c_str(), FormatClock(planned_total_).c_str());
  std::fflush(out_);
}

bool PlannedReporter::ReportContext(const Context& context) {
  inner_->SetOutputStream(&GetOutputStream());
  inner_->SetErrorStream(&GetErrorStream());
  return inner_->ReportContext(context);
}

void PlannedReporter::ReportRuns(const std::vector<Run>& runs) {
  std::vector<Run> cleaned = runs;
  for (Run& run : cleaned) {
    run.run_name.min_time.clear();
    run.run_name.iterations.clear();
  }
  if (progress_ != nullptr) progress_->ClearLine();
  inner_->ReportRuns(cleaned);
  GetOutputStream().flush();
  if (progress_ != nullptr && !cleaned.empty()) progress_->Finished(cleaned.front().run_name.str());
}

void PlannedReporter::Finalize() {
  inner_->Finalize();
  GetOutputStream().flush();
  if (progress_ != nullptr) progress_->Done();
}

std::unique_ptr<benchmark::BenchmarkReporter> CreateFileReporter(const std::string& format) {
  if (format == "console") {
    return std::make_unique<benchmark::ConsoleReporter>(benchmark::ConsoleReporter::OO_None);
  }
  if (format == "csv") {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    return std::make_unique<benchmark::CSVReporter>();
#pragma GCC diagnostic pop
  }
  return std::make_unique<benchmark::JSONReporter>();
}

}  // namespace perfscale
