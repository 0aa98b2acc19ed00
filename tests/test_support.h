// Helpers shared by the test suites: where ../shared and the built binary are, reading files,
// running the binary as a whole process.
#pragma once

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace ttap_test {

inline bool PathExists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}
// The names in |dir| that end with |suffix| (files and folders, not . and ..), in byte order.
inline std::vector<std::string> ListDir(const std::string& dir, const std::string& suffix = "") {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n == "." || n == ".." || n.size() < suffix.size() ||
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline std::string SharedDir() { return TTAP_SHARED_DIR; }
inline std::string RealTracesDir() { return SharedDir() + "/traces/real"; }
inline bool HaveShared() { return PathExists(RealTracesDir() + "/INDEX.tsv"); }
inline std::string SourceDir() { return TTAP_SOURCE_DIR; }
inline std::string Binary() { return TTAP_BINARY; }
// The models module beside the binary (absent when libtorch was not found at build time).
inline std::string ModelsLib() {
  const std::string bin = Binary();
  return bin.substr(0, bin.find_last_of('/')) + "/libttap_models.so";
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A fresh directory under /tmp for one test.
inline std::string MakeTempDir() {
  char tmpl[] = "/tmp/ttap_test_XXXXXX";
  const char* dir = mkdtemp(tmpl);
  return dir ? dir : "/tmp";
}

// Writes |text| to |path| (binary); false when it cannot.
inline bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

// In a Catch2 test: write the file or fail the test.
#define WriteOrFail(path, text) REQUIRE(ttap_test::WriteFile((path), (text)))

struct RunResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `ttap ARGS` (ARGS already shell-quoted by the caller), in |dir| when given.
inline RunResult RunTtap(const std::string& args, const std::string& dir = "") {
  static int counter = 0;
  std::string err_path =
      "/tmp/ttap_test_stderr_" + std::to_string(getpid()) + "_" + std::to_string(counter++);
  std::string cmd = (dir.empty() ? "" : "cd '" + dir + "' && ") + "'" + Binary() + "' " + args +
                    " 2>'" + err_path + "'";
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = ReadFile(err_path);
  std::remove(err_path.c_str());
  return r;
}

}  // namespace ttap_test
