// Quick fix `dataloader-workers` (TTA001): the DataLoader the loop iterates (or the line builds)
// gets num_workers, pin_memory and persistent_workers. Listed in mapping/quick_fix_registry.cpp;
// called through ComputeFixes (mapping/quick_fixes.cpp).
#include <algorithm>

#include "mapping/fixes/fix_util.h"
#include "mapping/quick_fix_registry.h"

namespace ttap::fixes {
namespace {

StatusOr<Fixes> FixDataLoader(const Ctx& c) {
  const PythonSource& src = c.src;
  StatusOr<TSNode> found = FindLoaderCall(c, c.stmt);
  if (!found.ok()) return found.status();
  TSNode call = *found;
  auto a = ReadArgs(call);
  if (!a) return c.Error("the DataLoader's arguments are not a plain argument list");
  if (a->star || a->star_star) {
    return c.Error("the DataLoader gets *args/**kwargs; cannot tell which options are set");
  }
  if (a->positional > 5) return c.Error("num_workers is passed positionally to the DataLoader");
  long workers = 8, cpus = 0;
  if (ParseInt(c.Fact("cpu_count"), &cpus) && cpus > 0) workers = std::min(8L, cpus);
  long forced = 0;
  if (ParseInt(c.Fact("num_workers"), &forced) && forced > 0) workers = forced;
  const std::string n = std::to_string(workers);

  std::vector<TextEdit> edits;
  std::vector<std::string> inserts, changes;
  bool workers_on = false;
  TSNode nw = KeywordValue(src, call, "num_workers");
  long current = 0;
  if (IsNull(nw)) {
    inserts.push_back("num_workers=" + n);
    changes.push_back("num_workers=" + n);
    workers_on = true;
  } else if (ParseInt(CompactNode(src, nw), &current)) {
    if (current == 0) {
      edits.push_back({Range(nw), n});
      changes.push_back("num_workers=" + n);
    }
    workers_on = true;
  }
  auto set_true = [&](const std::string& key) {
    TSNode v = KeywordValue(src, call, key);
    if (IsNull(v)) {
      inserts.push_back(key + "=True");
    } else if (CompactNode(src, v) == "False") {
      edits.push_back({Range(v), "True"});
    } else {
      return;  // True already, or computed
    }
    changes.push_back(key + "=True");
  };
  if (Lower(c.Fact("device")) != "cpu") set_true("pin_memory");
  if (workers_on) set_true("persistent_workers");
  for (auto& e : InsertKeywords(src, *a, inserts)) edits.push_back(e);
  if (edits.empty()) return Fixes{};
  std::string title = StartsWith(changes[0], "num_workers")
                          ? "Load batches in worker processes (" + Join(changes, ", ") + ")"
                          : "Set " + Join(changes, ", ") + " on the DataLoader";
  return Fixes{MakeFix(title, edits, true)};
}

}  // namespace

const QuickFixRecipe& DataLoaderWorkers() {
  static const QuickFixRecipe k{"dataloader-workers", {"TTA001"}, FixDataLoader};
  return k;
}

}  // namespace ttap::fixes
