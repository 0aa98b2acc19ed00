// Finding the workspace's traces: the folders skipped (tools' caches, virtual environments), the
// trace globs ("**/" = any folders), and the walk that follows symbolic links once each (by
// device and inode, so loops end) without a stat per plain file. Used by the session
// (lsp_server.cpp) and its watcher (dir_watcher.h shares SkipDirectory).
#pragma once

#include <sys/stat.h>

#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ttap::lsp {

// Folders neither searched nor watched for traces.
bool SkipDirectory(const std::string& name, const std::string& path);
// fnmatch with "**/" meaning any directories (including none).
bool GlobMatch(const std::string& glob, const std::string& rel);
// True when any of |globs| matches |rel| (a path relative to its workspace folder).
bool MatchesAnyGlob(const std::vector<std::string>& globs, const std::string& rel);
// The folder walk that trace discovery and the watcher (dir_watcher.h) share. From |root|,
// symbolic links are followed, each folder is entered once by (device, inode) in |visited| (so
// link loops end), at most 32 deep, never into a folder |skip| names. |enter| is called with
// each folder before it is listed and returns false to leave it unlisted (a budget, a failed
// watch); |file|, when set, gets each plain file (or link to one) by its path relative to
// |root|. Plain files cost no stat: a dataset folder of 100k images is listed, not probed.
struct FolderVisitor {
  std::function<bool(const std::string& dir)> enter;
  std::function<void(const std::string& rel)> file;
};
void WalkFolders(const std::string& root, const FolderVisitor& visitor,
                 const std::function<bool(const std::string& name, const std::string& path)>& skip,
                 std::set<std::pair<dev_t, ino_t>>* visited);

// Appends to |out| the files under |root| that match |globs|; |dirs_left| bounds the folders
// listed, |visited| holds the (device, inode) of those seen (shared across roots).
void FindTraces(const std::string& root, const std::vector<std::string>& globs,
                std::vector<std::string>* out, size_t* dirs_left,
                std::set<std::pair<dev_t, ino_t>>* visited);

}  // namespace ttap::lsp
