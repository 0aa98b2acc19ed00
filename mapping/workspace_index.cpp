// WorkspaceIndex implementation; see workspace_index.h.
#include "mapping/workspace_index.h"

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <set>

#include "analysis/base/string_util.h"

namespace ttap {

namespace {

std::string Basename(std::string_view p) {
  size_t slash = p.find_last_of("/\\");
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

std::string Normalize(std::string_view p) {
  std::string s(p);
  std::replace(s.begin(), s.end(), '\\', '/');
  while (s.rfind("./", 0) == 0) s.erase(0, 2);
  return s;
}

bool SkipDir(const std::string& name, const std::vector<std::string>& exclude) {
  static const char* kSkip[] = {".git",          ".hg",   ".svn", "node_modules", "__pycache__",
                                ".venv",         "venv",  ".tox", ".mypy_cache",  "site-packages",
                                "dist-packages", "build", ".eggs"};
  for (const char* s : kSkip) {
    if (name == s) return true;
  }
  return std::find(exclude.begin(), exclude.end(), name) != exclude.end();
}

}  // namespace

bool IsLibraryPath(std::string_view p) {
  return p.empty() || p.front() == '<' || p.find("site-packages/") != std::string_view::npos ||
         p.find("dist-packages/") != std::string_view::npos ||
         p.find("/.venv/") != std::string_view::npos ||
         p.find("/venv/") != std::string_view::npos ||
         p.find("/lib/python3") != std::string_view::npos || p.rfind("torch/", 0) == 0 ||
         p.rfind("torchvision/", 0) == 0 || p.rfind("transformers/", 0) == 0 ||
         p.rfind("typing.py", 0) == 0 || p.rfind("threading.py", 0) == 0 ||
         p.rfind("contextlib.py", 0) == 0 || p.rfind("runpy.py", 0) == 0 ||
         p.rfind("functools.py", 0) == 0;
}

bool FrameFilter::Accepts(std::string_view path) const {
  std::string p(path);
  for (const auto& g : exclude) {
    if (fnmatch(g.c_str(), p.c_str(), 0) == 0) return false;
  }
  if (include.empty()) return true;
  for (const auto& g : include) {
    if (fnmatch(g.c_str(), p.c_str(), 0) == 0) return true;
  }
  return false;
}

std::string WorkspaceIndex::RelativeOf(const std::string& path) const {
  std::string p = Normalize(path);
  if (p.rfind(root_ + "/", 0) == 0) return p.substr(root_.size() + 1);
  return p.empty() || p.front() == '/' ? std::string() : p;
}

bool WorkspaceIndex::AddFile(const std::string& path) {
  std::string rel = RelativeOf(path);
  if (rel.empty() || !EndsWith(rel, ".py")) return false;
  // Skip files inside ignored directories.
  size_t start = 0;
  for (size_t slash = rel.find('/'); slash != std::string::npos; slash = rel.find('/', start)) {
    if (SkipDir(rel.substr(start, slash - start), exclude_dirs_)) return false;
    start = slash + 1;
  }
  auto& bucket = by_basename_[Basename(rel)];
  for (size_t idx : bucket) {
    if (files_[idx] == rel) return false;
  }
  Add(rel);
  return true;
}

bool WorkspaceIndex::RemoveFile(const std::string& path) {
  std::string rel = RelativeOf(path);
  auto it = std::find(files_.begin(), files_.end(), rel);
  if (rel.empty() || it == files_.end()) return false;
  files_.erase(it);
  by_basename_.clear();
  for (size_t i = 0; i < files_.size(); ++i) by_basename_[Basename(files_[i])].push_back(i);
  return true;
}

void WorkspaceIndex::Rescan() { *this = Build(root_, maps_, exclude_dirs_); }

void WorkspaceIndex::Add(std::string relative) {
  by_basename_[Basename(relative)].push_back(files_.size());
  files_.push_back(std::move(relative));
}

WorkspaceIndex WorkspaceIndex::FromFiles(const std::string& root, std::vector<std::string> relative,
                                         std::vector<PathMap> maps) {
  WorkspaceIndex w;
  w.root_ = root;
  w.maps_ = std::move(maps);
  for (auto& r : relative) w.Add(Normalize(r));
  return w;
}

WorkspaceIndex WorkspaceIndex::Build(const std::string& root, std::vector<PathMap> maps,
                                     std::vector<std::string> exclude) {
  WorkspaceIndex w;
  w.root_ = root;
  while (w.root_.size() > 1 && w.root_.back() == '/') w.root_.pop_back();
  w.maps_ = std::move(maps);
  w.exclude_dirs_ = exclude;
  size_t budget = 200000;  // files visited at most
  // Symbolic links are followed (a source folder linked into the workspace), each folder entered
  // once by (device, inode): link loops end.
  std::set<std::pair<dev_t, ino_t>> entered;
  std::function<void(const std::string&, int)> walk = [&](const std::string& rel, int depth) {
    if (depth > 32 || budget == 0) return;
    std::string dir = rel.empty() ? w.root_ : w.root_ + "/" + rel;
    struct stat self;
    if (stat(dir.c_str(), &self) != 0 || !entered.insert({self.st_dev, self.st_ino}).second) {
      return;
    }
    DIR* d = opendir(dir.c_str());
    if (!d) return;
    std::vector<std::pair<std::string, bool>> entries;
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n == "." || n == "..") continue;
      struct stat st;
      std::string full = dir + "/" + n;
      if (lstat(full.c_str(), &st) != 0) continue;
      if (S_ISLNK(st.st_mode) && stat(full.c_str(), &st) != 0) continue;  // dangling
      if (S_ISDIR(st.st_mode)) {
        // A directory with pyvenv.cfg is a virtual environment.
        struct stat cfg;
        if (SkipDir(n, exclude) || stat((full + "/pyvenv.cfg").c_str(), &cfg) == 0) continue;
        entries.emplace_back(n, true);
      } else if (S_ISREG(st.st_mode) && EndsWith(n, ".py")) {
        entries.emplace_back(n, false);
      }
    }
    closedir(d);
    std::sort(entries.begin(), entries.end());
    for (auto& [n, is_dir] : entries) {
      if (budget == 0) return;
      --budget;
      std::string r = rel.empty() ? n : rel + "/" + n;
      if (is_dir)
        walk(r, depth + 1);
      else
        w.Add(r);
    }
  };
  walk("", 0);
  return w;
}

ResolvedPath WorkspaceIndex::Resolve(std::string_view frame_path) const {
  ResolvedPath out;
  std::string p = Normalize(frame_path);
  if (p.empty() || files_.empty()) return out;
  // Configured path maps first: they state the user's intent.
  for (const auto& m : maps_) {
    if (!m.from.empty() && p.rfind(m.from, 0) == 0) {
      std::string mapped = m.to + p.substr(m.from.size());
      if (!mapped.empty() && mapped.front() != '/') mapped = root_ + "/" + mapped;
      p = Normalize(mapped);
      break;
    }
  }
  // Exact: an absolute path inside the root, or a path relative to it.
  std::string rel;
  if (p.rfind(root_ + "/", 0) == 0)
    rel = p.substr(root_.size() + 1);
  else if (p.front() != '/')
    rel = p;
  if (!rel.empty()) {
    auto it = by_basename_.find(Basename(rel));
    if (it != by_basename_.end()) {
      for (size_t idx : it->second) {
        if (files_[idx] == rel) {
          out.status = Resolution::kResolved;
          out.path = root_ + "/" + files_[idx];
          return out;
        }
      }
    }
  }
  // Longest unique suffix match over path components.
  auto it = by_basename_.find(Basename(p));
  if (it == by_basename_.end()) return out;
  size_t best_len = 0;
  std::vector<size_t> best;
  for (size_t idx : it->second) {
    const std::string& f = files_[idx];
    // Count matching trailing components.
    size_t i = p.size(), j = f.size(), matched = 0;
    while (i > 0 && j > 0) {
      size_t ps = p.rfind('/', i - 1), fs = f.rfind('/', j - 1);
      size_t pa = ps == std::string::npos ? 0 : ps + 1, fa = fs == std::string::npos ? 0 : fs + 1;
      if (p.compare(pa, i - pa, f, fa, j - fa) != 0) break;
      ++matched;
      if (ps == std::string::npos || fs == std::string::npos) break;
      i = ps;
      j = fs;
    }
    if (matched > best_len) {
      best_len = matched;
      best = {idx};
    } else if (matched == best_len && matched > 0) {
      best.push_back(idx);
    }
  }
  if (best.size() == 1) {
    out.status = Resolution::kResolved;
    out.path = root_ + "/" + files_[best[0]];
  } else if (best.size() > 1) {
    out.status = Resolution::kAmbiguous;
    for (size_t idx : best) out.candidates.push_back(root_ + "/" + files_[idx]);
  }
  return out;
}

int SelectUserFrame(const std::vector<FindingFrame>& frames, const WorkspaceIndex* workspace,
                    ResolvedPath* resolved, const FrameFilter* filter) {
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string& file = frames[i].file;
    if (IsLibraryPath(file)) continue;
    if (filter && !filter->Accepts(file)) continue;
    if (workspace && !workspace->empty()) {
      ResolvedPath r = workspace->Resolve(file);
      if (r.status == Resolution::kResolved) {
        if (resolved) *resolved = r;
        return static_cast<int>(i);
      }
      if (r.status == Resolution::kAmbiguous) {
        if (resolved) *resolved = r;
        return static_cast<int>(i);
      }
      continue;
    }
    if (EndsWith(file, ".py")) {
      if (resolved) *resolved = ResolvedPath{};
      return static_cast<int>(i);
    }
  }
  return -1;
}

std::vector<std::string> WorkspaceIndex::AbsoluteFiles(size_t limit) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < files_.size() && i < limit; ++i) out.push_back(root_ + "/" + files_[i]);
  return out;
}

}  // namespace ttap
