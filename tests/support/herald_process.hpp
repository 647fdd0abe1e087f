#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace herald::test {

/// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class temp_dir {
public:
  explicit temp_dir(const std::string& prefix = "herald-test");
  ~temp_dir();
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::string& path() const { return path_; }
  /// path() + "/" + name.
  std::string file(const std::string& name) const;

private:
  std::string path_;
};

/// A port nobody listens on right now (bind port 0, read it, close). Another process may
/// still take it before we do; good enough on a test machine.
std::uint16_t free_port();

/// The herald executable under test: $HERALD_BINARY; throws if it is not set.
std::string herald_binary();

/// Writes `text` to `path` (for config files given to the binary).
void write_file(const std::string& path, const std::string& text);

/// The whole file, or "" when it cannot be read.
std::string read_file(const std::string& path);

/// A run of the binary that is expected to end by itself.
struct run_result {
  int exit_code = -1; ///< 128 + signal number when killed by a signal
  std::string out;
  std::string err;
};

/// Runs herald with `args`, waits at most `timeout` (then kills it and throws).
run_result run_herald(const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(30));

/// A figure of process `pid`'s /proc status in KiB: "VmRSS" (resident now) or "VmHWM" (the
/// most it was resident since it started, so a spike that is freed again still shows); -1 when
/// unreadable.
long status_kib(pid_t pid, const std::string& field);

/// Whether process `pid`'s resident memory measures herald's own: not when it runs with
/// AddressSanitizer (libasan mapped, as a -DHERALD_SANITIZE=ON binary has), whose shadow memory
/// and quarantine take hundreds of MiB and still grow for seconds after the start. Memory
/// bounds are checked only where it does.
bool rss_measures_herald(pid_t pid);

/// Limits a herald_process starts under.
struct process_limits {
  /// RLIMIT_NOFILE, soft and hard, as `ulimit -n` sets it; nullopt: inherited.
  std::optional<unsigned> open_files;
};

/// A running herald process (posix_spawn), stdout and stderr going to `log_path`. The
/// destructor kills it if it still runs.
class herald_process {
public:
  herald_process(const std::vector<std::string>& args, std::string log_path,
                 process_limits limits = {});
  ~herald_process();
  herald_process(const herald_process&) = delete;
  herald_process& operator=(const herald_process&) = delete;

  /// Polls GET /healthz every 20 ms until it answers 200; false if the process exited or
  /// `timeout` passed first.
  bool wait_ready(const std::string& host, std::uint16_t port,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));

  /// Sends a signal (SIGTERM, SIGKILL...) if it still runs.
  void signal(int number);

  /// Waits at most `timeout` for the process to end; its exit code (128 + signal when killed
  /// by one), or nullopt if it still runs.
  std::optional<int> wait_exit(std::chrono::milliseconds timeout);

  /// SIGTERM, then SIGKILL after `grace`; the exit code.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(15));

  bool running();
  pid_t pid() const { return pid_; }
  /// What the process wrote so far.
  std::string log() const;

private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
  std::string log_path_;
};

} // namespace herald::test
