// dlopen-based loading of the models module; see models_loader.h.
#include "server/models_loader.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "models/models_api.h"

namespace ttap {

namespace {

std::string ExecutableDir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string p(buf, static_cast<size_t>(n));
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? "." : p.substr(0, slash);
}

}  // namespace

StatusOr<const ModelsLibrary*> ModelsLibrary::Get() {
  static std::once_flag once;
  static ModelsLibrary* library = nullptr;
  static std::string error;
  std::call_once(once, [] {
    std::vector<std::string> candidates;
    if (const char* env = std::getenv("TTAP_MODELS_LIB"); env && *env) {
      candidates.push_back(env);  // an explicit choice: no silent fallback
    } else {
      std::string dir = ExecutableDir();
      candidates.push_back(dir + "/libttap_models.so");
      candidates.push_back(dir + "/../lib/ttap/libttap_models.so");
    }
    std::string tried;
    for (const auto& path : candidates) {
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) {
        const char* e = dlerror();
        tried += "\n  " + path + ": " + (e ? e : "cannot load");
        continue;
      }
      auto* lib = new ModelsLibrary();
      lib->path_ = path;
      lib->api_version_ = reinterpret_cast<int (*)()>(dlsym(handle, "ttap_models_api_version"));
      lib->describe_ =
          reinterpret_cast<size_t (*)(char*, size_t)>(dlsym(handle, "ttap_models_describe"));
      lib->train = reinterpret_cast<decltype(lib->train)>(dlsym(handle, "ttap_models_train"));
      lib->open = reinterpret_cast<decltype(lib->open)>(dlsym(handle, "ttap_models_open"));
      lib->header = reinterpret_cast<decltype(lib->header)>(dlsym(handle, "ttap_models_header"));
      lib->score = reinterpret_cast<decltype(lib->score)>(dlsym(handle, "ttap_models_score"));
      lib->set_tuning =
          reinterpret_cast<decltype(lib->set_tuning)>(dlsym(handle, "ttap_models_set_tuning"));
      lib->close = reinterpret_cast<decltype(lib->close)>(dlsym(handle, "ttap_models_close"));
      if (!lib->api_version_ || !lib->describe_ || lib->api_version_() != TTAP_MODELS_API_VERSION ||
          !lib->train || !lib->open || !lib->header || !lib->score || !lib->set_tuning ||
          !lib->close) {
        tried += "\n  " + path + ": not a compatible ttap models module";
        delete lib;
        continue;
      }
      library = lib;
      return;
    }
    error = "the window-scoring model library is not available (rules still work):" + tried;
  });
  if (!library) return Status::Error(error);
  return static_cast<const ModelsLibrary*>(library);
}

std::string ModelsLibrary::Describe() const {
  std::string s(describe_(nullptr, 0) + 1, '\0');
  describe_(&s[0], s.size());
  s.resize(s.size() - 1);
  return s;
}

}  // namespace ttap
