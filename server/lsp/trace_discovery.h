// Finding the workspace's traces: the folders skipped (tools' caches, virtual environments), the
// trace globs ("**/" = any folders), and the walk that follows symbolic links once each (by
// device and inode, so loops end) without a stat per plain file. Used by the session
// (lsp_server.cpp) and its watcher (dir_watcher.h shares SkipDirectory).
#pragma once

#include <sys/stat.h>

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
// Appends to |out| the files under |root|/|rel| that match |globs|; |dirs_left| bounds the
// directories visited, |visited| holds the (device, inode) of those seen.
void FindTraces(const std::string& root, const std::string& rel,
                const std::vector<std::string>& globs, int depth, std::vector<std::string>* out,
                size_t* dirs_left, std::set<std::pair<dev_t, ino_t>>* visited);

}  // namespace ttap::lsp
