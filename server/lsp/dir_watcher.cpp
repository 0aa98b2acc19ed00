// DirWatcher; see dir_watcher.h.
#include "server/lsp/dir_watcher.h"

#include <dirent.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "server/lsp/trace_discovery.h"

namespace ttap::lsp {

namespace {

constexpr uint32_t kMask = IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE |
                           IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

// A folder's (device, inode), {0, 0} when it does not exist.
std::pair<unsigned long, unsigned long> FolderId(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return {0UL, 0UL};
  return {static_cast<unsigned long>(st.st_dev), static_cast<unsigned long>(st.st_ino)};
}

}  // namespace

DirWatcher::DirWatcher(const std::vector<std::string>& roots, SkipDir skip, size_t max_watches)
    : skip_(std::move(skip)), max_watches_(max_watches) {
  fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) {
    why_not_ = std::string("inotify: ") + std::strerror(errno);
    return;
  }
  for (const auto& r : roots) {
    roots_.push_back({r, FolderId(r)});
    WatchTree(r);
  }
}

bool DirWatcher::RootsMoved() const {
  for (const auto& [root, id] : roots_) {
    if (FolderId(root) != id) return true;
  }
  return false;
}

DirWatcher::~DirWatcher() {
  if (fd_ >= 0) close(fd_);
}

void DirWatcher::WatchTree(const std::string& dir) {
  FolderVisitor visitor;
  visitor.enter = [this](const std::string& folder) {
    if (over_budget_) return false;
    if (paths_.size() >= max_watches_) {
      over_budget_ = true;
      why_not_ = "more than " + std::to_string(max_watches_) + " folders to watch";
      return false;
    }
    const int wd = inotify_add_watch(fd_, folder.c_str(), kMask);
    if (wd < 0) {
      if (errno == ENOSPC || errno == ENOMEM) {
        over_budget_ = true;
        why_not_ = "the system's inotify watch limit is reached (fs.inotify.max_user_watches)";
      }
      return false;  // unreadable: nothing found there by the walk either
    }
    paths_[wd] = folder;
    return true;
  };
  // Files are not looked at: new ones arrive as events.
  WalkFolders(dir, visitor, skip_, &inodes_);
}

bool DirWatcher::Wait(int timeout_ms, const Relevant& relevant) {
  if (fd_ < 0) return false;
  pollfd p{fd_, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return false;
  bool changed = false;
  alignas(inotify_event) char buf[64 * 1024];
  while (true) {
    const ssize_t n = read(fd_, buf, sizeof(buf));
    if (n <= 0) break;
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (ev->mask & IN_Q_OVERFLOW) {
        changed = true;
        continue;
      }
      auto dir = paths_.find(ev->wd);
      if (dir == paths_.end()) continue;
      if (ev->mask & IN_IGNORED) {  // the directory went away
        paths_.erase(dir);
        changed = true;
        continue;
      }
      if (ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) {
        changed = true;
        continue;
      }
      const std::string name = ev->len ? std::string(ev->name) : std::string();
      const std::string path = name.empty() ? dir->second : dir->second + "/" + name;
      if (ev->mask & IN_ISDIR) {
        changed = true;
        if ((ev->mask & (IN_CREATE | IN_MOVED_TO)) && !skip_(name, path)) WatchTree(path);
        continue;
      }
      if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
        // A symbolic link to a folder (`log -> /scratch/run`) is watched like a folder; `ln -sfn`
        // re-points one by renaming a new link over it (IN_MOVED_TO).
        struct stat st;
        if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && !skip_(name, path)) {
          WatchTree(path);
          changed = true;
          continue;
        }
      }
      if (relevant(path)) changed = true;
    }
  }
  return changed;
}

}  // namespace ttap::lsp
