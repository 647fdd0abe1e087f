#include "support/herald_process.hpp"

#include "support/http_client.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <spawn.h>
#include <sstream>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace herald::test {

long status_kib(pid_t pid, const std::string& field) {
  std::ifstream status{"/proc/" + std::to_string(pid) + "/status"};
  std::string line;
  while (std::getline(status, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::stol(line.substr(field.size() + 1)); // "VmRSS:   12345 kB"
  return -1;
}

bool rss_measures_herald(pid_t pid) {
  std::ifstream maps{"/proc/" + std::to_string(pid) + "/maps"};
  std::string line;
  while (std::getline(maps, line))
    if (line.find("/libasan.so") != std::string::npos)
      return false;
  return true;
}
namespace {

[[noreturn]] void fail(const std::string& what, int error = errno) {
  throw std::system_error(error, std::generic_category(), what);
}

/// Spawns the binary with stdout and stderr redirected to files (the same file allowed).
pid_t spawn(const std::vector<std::string>& args, const std::string& out_path,
            const std::string& err_path, const process_limits& limits = {}) {
  std::vector<std::string> argv_text;
  if (limits.open_files) // the shell sets the limit, then becomes herald (same pid)
    argv_text = {"/bin/sh", "-c",
                 "ulimit -n " + std::to_string(*limits.open_files) + " && exec \"$0\" \"$@\""};
  argv_text.push_back(herald_binary());
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_text)
    argv.push_back(arg.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (err_path == out_path)
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  else
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    fail("cannot start " + argv_text[0], rc);
  return pid;
}

int decode_status(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

/// waitpid with a bound: polls every 5 ms until the child ends or the deadline passes.
std::optional<int> wait_child(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid)
      return decode_status(status);
    if (done < 0 && errno != EINTR)
      fail("waitpid");
    if (std::chrono::steady_clock::now() >= deadline)
      return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

} // namespace

temp_dir::temp_dir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  if (!::mkdtemp(pattern.data()))
    fail("mkdtemp " + pattern);
  path_ = pattern;
}

temp_dir::~temp_dir() {
  // HERALD_TEST_KEEP_DIRS=1 keeps the folders (node logs, configs) to look into a failure.
  if (const char* keep = std::getenv("HERALD_TEST_KEEP_DIRS"); keep && std::string(keep) == "1")
    return;
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string temp_dir::file(const std::string& name) const {
  return path_ + "/" + name;
}

std::uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    fail("socket");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    int error = errno;
    ::close(fd);
    fail("bind port 0", error);
  }
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string herald_binary() {
  const char* path = std::getenv("HERALD_BINARY");
  if (!path || !*path)
    throw std::runtime_error("HERALD_BINARY is not set (ctest sets it to the built herald)");
  return path;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

run_result run_herald(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  temp_dir dir("herald-run");
  auto out_path = dir.file("stdout");
  auto err_path = dir.file("stderr");
  pid_t pid = spawn(args, out_path, err_path);
  auto code = wait_child(pid, timeout);
  if (!code) {
    ::kill(pid, SIGKILL);
    wait_child(pid, std::chrono::seconds(10));
    throw std::runtime_error("herald did not exit within the time limit");
  }
  return run_result{*code, read_file(out_path), read_file(err_path)};
}

herald_process::herald_process(const std::vector<std::string>& args, std::string log_path,
                               process_limits limits)
    : log_path_(std::move(log_path)) {
  pid_ = spawn(args, log_path_, log_path_, limits);
}

herald_process::~herald_process() {
  if (pid_ > 0 && !exit_code_) {
    ::kill(pid_, SIGKILL);
    wait_child(pid_, std::chrono::seconds(10));
  }
}

bool herald_process::running() {
  if (exit_code_)
    return false;
  exit_code_ = wait_child(pid_, std::chrono::milliseconds(0));
  return !exit_code_;
}

bool herald_process::wait_ready(const std::string& host, std::uint16_t port,
                                std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!running())
      return false;
    try {
      http_connection connection(host, port, std::chrono::seconds(2));
      if (connection.request("GET", "/healthz").status == 200)
        return true;
    } catch (const std::exception&) {
      // Not listening yet.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void herald_process::signal(int number) {
  if (running())
    ::kill(pid_, number);
}

std::optional<int> herald_process::wait_exit(std::chrono::milliseconds timeout) {
  if (!exit_code_)
    exit_code_ = wait_child(pid_, timeout);
  return exit_code_;
}

int herald_process::stop(std::chrono::milliseconds grace) {
  signal(SIGTERM);
  if (auto code = wait_exit(grace))
    return *code;
  signal(SIGKILL);
  auto code = wait_exit(std::chrono::seconds(10));
  return code ? *code : -1;
}

std::string herald_process::log() const {
  return read_file(log_path_);
}

} // namespace herald::test
