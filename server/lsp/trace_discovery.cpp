// Trace discovery; see trace_discovery.h.
#include "server/lsp/trace_discovery.h"

#include <dirent.h>
#include <fnmatch.h>

namespace ttap::lsp {

namespace {

bool SkippedDir(const std::string& n) {
  return n == ".git" || n == "node_modules" || n == "__pycache__" || n == ".venv" || n == "venv" ||
         n == "site-packages" || n == ".tox" || n == ".mypy_cache";
}

}  // namespace

// Folders neither searched nor watched for traces: tools' caches and virtual environments.
bool SkipDirectory(const std::string& name, const std::string& path) {
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

// Walks |root| for files matching |globs|. Symbolic links are followed (a `log -> /scratch/run`
// link, a linked trace), each directory once by (device, inode), so link loops end. Plain files
// cost no stat unless a glob matches: a dataset folder of 100k images is listed, not probed.
// |dirs_left| bounds the directories visited.
void FindTraces(const std::string& root, const std::string& rel,
                const std::vector<std::string>& globs, int depth, std::vector<std::string>* out,
                size_t* dirs_left, std::set<std::pair<dev_t, ino_t>>* visited) {
  if (depth > 32 || *dirs_left == 0) return;
  std::string dir = rel.empty() ? root : root + "/" + rel;
  struct stat self;
  if (stat(dir.c_str(), &self) != 0 || !visited->insert({self.st_dev, self.st_ino}).second) return;
  --*dirs_left;
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  auto matches = [&](const std::string& r) { return MatchesAnyGlob(globs, r); };
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string r = rel.empty() ? n : rel + "/" + n;
    if (e->d_type == DT_REG) {
      if (matches(r)) out->push_back(root + "/" + r);
      continue;
    }
    if (e->d_type != DT_DIR && e->d_type != DT_LNK && e->d_type != DT_UNKNOWN) continue;
    struct stat st;
    if (stat((root + "/" + r).c_str(), &st) != 0) continue;  // follows links; dangling: skip
    if (S_ISDIR(st.st_mode)) {
      if (!SkipDirectory(n, root + "/" + r))
        FindTraces(root, r, globs, depth + 1, out, dirs_left, visited);
    } else if (S_ISREG(st.st_mode) && matches(r)) {
      out->push_back(root + "/" + r);
    }
  }
  closedir(d);
}

}  // namespace ttap::lsp
