// Trace discovery; see trace_discovery.h.
#include "server/lsp/trace_discovery.h"

#include <dirent.h>
#include <fnmatch.h>

#include <deque>

namespace ttap::lsp {

namespace {

bool SkippedDir(const std::string& n) {
  return n == ".git" || n == "node_modules" || n == "__pycache__" || n == ".venv" || n == "venv" ||
         n == "site-packages" || n == ".tox" || n == ".mypy_cache";
}

}  // namespace

// Folders neither searched nor watched for traces: tools' caches and virtual environments.
bool SkipDirectory(const std::string& name, const std::string& path) {
  // The kernel's and the devices' pseudo file systems hold no traces (a workspace folder of
  // `/` walked into /proc/self/task/*/cwd for 48 s).
  if (path == "/proc" || path == "/sys" || path == "/dev" || path == "/run" ||
      path.rfind("/proc/", 0) == 0 || path.rfind("/sys/", 0) == 0) {
    return true;
  }
  struct stat cfg;
  return SkippedDir(name) || stat((path + "/pyvenv.cfg").c_str(), &cfg) == 0;
}

// fnmatch with "**/" meaning any directories (including none).
bool GlobMatch(const std::string& glob, const std::string& rel) {
  if (fnmatch(glob.c_str(), rel.c_str(), 0) == 0) return true;
  if (glob.rfind("**/", 0) == 0) {
    std::string rest = glob.substr(3);
    if (fnmatch(rest.c_str(), rel.c_str(), 0) == 0) return true;
    size_t slash = rel.find('/');
    while (slash != std::string::npos) {
      if (fnmatch(rest.c_str(), rel.substr(slash + 1).c_str(), 0) == 0) return true;
      slash = rel.find('/', slash + 1);
    }
  }
  return false;
}

bool MatchesAnyGlob(const std::vector<std::string>& globs, const std::string& rel) {
  for (const auto& g : globs) {
    if (GlobMatch(g, rel)) return true;
  }
  return false;
}

namespace {

// Breadth-first: the folders near the root (where runs write their traces: log/, runs/) are
// listed before the depths of a dataset tree, so a budget spent on 60,000 image folders never
// hides the run folder.
void WalkFrom(const std::string& root, const FolderVisitor& visitor,
              const std::function<bool(const std::string&, const std::string&)>& skip,
              std::set<std::pair<dev_t, ino_t>>* visited) {
  std::deque<std::pair<std::string, int>> pending = {{"", 0}};
  while (!pending.empty()) {
    auto [rel, depth] = std::move(pending.front());
    pending.pop_front();
    if (depth > 32) continue;
    const std::string dir = rel.empty() ? root : root + "/" + rel;
    struct stat self;
    if (stat(dir.c_str(), &self) != 0 || !S_ISDIR(self.st_mode) ||
        !visited->insert({self.st_dev, self.st_ino}).second || !visitor.enter(dir)) {
      continue;
    }
    DIR* d = opendir(dir.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      std::string r = rel.empty() ? n : rel + "/" + n;
      if (e->d_type == DT_REG) {
        if (visitor.file) visitor.file(r);
        continue;
      }
      if (e->d_type != DT_DIR && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) continue;
      struct stat st;
      if (stat((root + "/" + r).c_str(), &st) != 0) continue;  // follows links; dangling: skip
      if (S_ISDIR(st.st_mode)) {
        if (!skip(n, root + "/" + r)) pending.emplace_back(std::move(r), depth + 1);
      } else if (S_ISREG(st.st_mode) && visitor.file) {
        visitor.file(r);
      }
    }
    closedir(d);
  }
}

}  // namespace

void WalkFolders(const std::string& root, const FolderVisitor& visitor,
                 const std::function<bool(const std::string&, const std::string&)>& skip,
                 std::set<std::pair<dev_t, ino_t>>* visited) {
  WalkFrom(root, visitor, skip, visited);
}

void FindTraces(const std::string& root, const std::vector<std::string>& globs,
                std::vector<std::string>* out, size_t* dirs_left,
                std::set<std::pair<dev_t, ino_t>>* visited) {
  FolderVisitor visitor;
  visitor.enter = [&](const std::string&) {
    if (*dirs_left == 0) return false;
    --*dirs_left;
    return true;
  };
  visitor.file = [&](const std::string& rel) {
    if (MatchesAnyGlob(globs, rel)) out->push_back(root + "/" + rel);
  };
  WalkFolders(root, visitor, SkipDirectory, visited);
}

}  // namespace ttap::lsp
