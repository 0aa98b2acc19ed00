// DirWatcher: recursive inotify watches on the workspace folders, so the language server learns
// of new, rewritten or deleted traces without walking the tree every poll (a 120k-file workspace
// cost 10% of a core at one walk per second). Directories the predicate skips (.git, venvs, ...)
// are not watched; symbolic links to directories are followed, each directory once by inode.
// At most |max_watches| directories are watched: past that, or without inotify, ok() is false
// and the caller polls (with backoff). Used by the session's watch thread only (lsp_server.cpp).
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ttap::lsp {

class DirWatcher {
 public:
  // True for a directory that is not to be watched (|name| its last component).
  using SkipDir = std::function<bool(const std::string& name, const std::string& path)>;
  // True for a changed file's path worth a look (a trace glob matches it).
  using Relevant = std::function<bool(const std::string& path)>;

  DirWatcher(const std::vector<std::string>& roots, SkipDir skip, size_t max_watches = 16384);
  ~DirWatcher();
  DirWatcher(const DirWatcher&) = delete;
  DirWatcher& operator=(const DirWatcher&) = delete;

  bool ok() const { return fd_ >= 0 && !over_budget_; }
  // Why ok() is false ("" when it is true).
  const std::string& why_not() const { return why_not_; }
  size_t watch_count() const { return paths_.size(); }

  // Waits up to |timeout_ms| for events; true when a file |relevant| accepts was created,
  // written and closed, moved in or out, or deleted, when a directory came or went (new ones are
  // watched at once), or when the kernel's queue overflowed.
  bool Wait(int timeout_ms, const Relevant& relevant);
  // True when a root is no longer the folder that was watched (deleted and made again, or
  // missing then, or now missing): the caller builds a new watcher. A few stats.
  bool RootsMoved() const;

 private:
  // Watches |dir| and the folders below it (trace_discovery.h's WalkFolders).
  void WatchTree(const std::string& dir);
  int fd_ = -1;
  SkipDir skip_;
  size_t max_watches_;
  bool over_budget_ = false;
  std::string why_not_;
  std::map<int, std::string> paths_;                          // watch descriptor -> directory
  std::set<std::pair<unsigned long, unsigned long>> inodes_;  // (device, inode) watched
  // Each root and the (device, inode) it had when watched ({0, 0}: missing).
  std::vector<std::pair<std::string, std::pair<unsigned long, unsigned long>>> roots_;
};

}  // namespace ttap::lsp
