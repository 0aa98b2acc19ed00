// WorkspaceIndex: the Python files of a workspace, and the resolution of a frame path recorded in
// a trace (often on another machine: /workspace/proj/train.py, /home/u/proj/train.py, train.py,
// or relative to a sys.path entry) to one of them: exact path, then configured path maps
// (prefix -> prefix), then the longest unique path-suffix match; ambiguity is reported, never
// guessed. Virtual environments and site-packages inside the workspace are library code and
// are not indexed. Used by the scan command and the language server.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model/findings.h"

namespace ttap {

struct PathMap {
  std::string from;  // prefix as recorded in traces
  std::string to;    // prefix in the workspace (absolute, or relative to the root)
};

enum class Resolution { kResolved, kNotFound, kAmbiguous };

struct ResolvedPath {
  Resolution status = Resolution::kNotFound;
  std::string path;                     // absolute workspace path when resolved
  std::vector<std::string> candidates;  // when ambiguous
};

// Which frames count as user code, beyond the built-in library test (configurable globs over
// the recorded frame path, fnmatch syntax: `**/vendor/**`, `*/site_overrides.py`).
struct FrameFilter {
  std::vector<std::string> include;  // when non-empty, only matching paths are user code
  std::vector<std::string> exclude;  // matching paths are never user code
  bool Accepts(std::string_view path) const;
};

class WorkspaceIndex {
 public:
  WorkspaceIndex() = default;
  // Walks |root| for *.py files (skipping .git, node_modules, __pycache__, virtual environments
  // and site-packages). |exclude| holds extra directory names to skip.
  static WorkspaceIndex Build(const std::string& root, std::vector<PathMap> maps = {},
                              std::vector<std::string> exclude = {});
  // For tests: an index over given relative paths.
  static WorkspaceIndex FromFiles(const std::string& root, std::vector<std::string> relative,
                                  std::vector<PathMap> maps = {});

  ResolvedPath Resolve(std::string_view frame_path) const;

  // Keeping the index current as files appear, disappear or move (the language server calls
  // these from file-watch events). Paths are absolute or relative to the root; non-.py files
  // and files in skipped directories are ignored. Return whether the index changed.
  bool AddFile(const std::string& path);
  bool RemoveFile(const std::string& path);
  // Walks the root again (e.g. after a directory was moved).
  void Rescan();
  const std::string& root() const { return root_; }
  // The indexed files as absolute paths, at most |limit| of them.
  std::vector<std::string> AbsoluteFiles(size_t limit) const;
  bool empty() const { return files_.empty(); }
  size_t size() const { return files_.size(); }

 private:
  void Add(std::string relative);
  std::string RelativeOf(const std::string& path) const;
  std::string root_;
  std::vector<std::string> exclude_dirs_;
  std::vector<std::string> files_;  // relative to root
  std::unordered_map<std::string, std::vector<size_t>> by_basename_;
  std::vector<PathMap> maps_;
};

// True for paths that are library code wherever they are (site-packages, dist-packages, a
// virtual environment, the standard library, <frozen ...>, <built-in ...>).
bool IsLibraryPath(std::string_view path);

// Picks the responsible user frame of |frames| (innermost first): the innermost frame that
// resolves to a workspace file; without a workspace, the innermost frame that is not library code
// and looks like a user script. Returns -1 when none qualifies; sets |resolved| to the resolution.
int SelectUserFrame(const std::vector<FindingFrame>& frames, const WorkspaceIndex* workspace,
                    ResolvedPath* resolved, const FrameFilter* filter = nullptr);

}  // namespace ttap
