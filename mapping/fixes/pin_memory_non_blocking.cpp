// Quick fix `pin-memory-non-blocking` (TTA003): a host-to-device copy gets non_blocking=True and
// the DataLoader its loop iterates pin_memory=True. Listed in mapping/quick_fix_registry.cpp;
// called through ComputeFixes (mapping/quick_fixes.cpp).
#include "mapping/fixes/fix_util.h"
#include "mapping/quick_fix_registry.h"

namespace ttap::fixes {
namespace {

enum class DeviceKind { kDevice, kCpu, kUnknown };

DeviceKind ClassifyDevice(const Ctx& c, TSNode n) {
  n = Unparen(n);
  std::string_view t = NodeType(n);
  std::string text = Lower(CompactNode(c.src, n));
  if (t == "string") {
    std::string s = text.size() >= 2 ? text.substr(1, text.size() - 2) : text;
    if (StartsWith(s, "cpu")) return DeviceKind::kCpu;
    if (StartsWith(s, "meta") || s.empty()) return DeviceKind::kUnknown;
    return DeviceKind::kDevice;
  }
  if (t == "integer") return DeviceKind::kDevice;
  if (t == "call") {
    std::string callee = CalleeText(c.src, n);
    auto a = ReadArgs(n);
    if ((callee == "torch.device" || callee == "device") && a && !a->items.empty()) {
      return ClassifyDevice(c, a->items[0]);
    }
    return DeviceKind::kUnknown;
  }
  if (!IsNameOrAttribute(n)) return DeviceKind::kUnknown;
  if (StartsWith(text, "torch.") || text.find("dtype") != std::string::npos) {
    return DeviceKind::kUnknown;
  }
  std::string last = text.substr(text.rfind('.') + 1);
  if (last.find("cpu") != std::string::npos) return DeviceKind::kCpu;
  for (const char* word : {"device", "dev", "gpu", "cuda", "rank"}) {
    if (last.find(word) != std::string::npos) return DeviceKind::kDevice;
  }
  return DeviceKind::kUnknown;
}

StatusOr<Fixes> FixPinnedCopy(const Ctx& c) {
  const PythonSource& src = c.src;
  std::vector<TextEdit> edits;
  int copies = 0;
  bool to_cpu = false;
  std::string unknown;
  for (TSNode call : HeaderCalls(c.stmt)) {
    std::string cn = CalleeName(src, call);
    if (NodeType(Field(call, "function")) != "attribute") continue;
    if (cn == "cpu") to_cpu = true;
    if (cn != "to" && cn != "cuda") continue;
    auto a = ReadArgs(call);
    if (!a) continue;
    size_t nb_index = 1;  // .cuda(device, non_blocking)
    if (cn == "to") {
      nb_index = 2;  // .to(device, dtype, non_blocking)
      TSNode dev = KeywordValue(src, call, "device");
      if (IsNull(dev) && a->positional >= 1) dev = a->items[0];
      if (IsNull(dev)) continue;  // .to(dtype=...) / .to(memory_format=...): no copy
      DeviceKind kind = ClassifyDevice(c, dev);
      if (kind == DeviceKind::kCpu) to_cpu = true;
      if (kind != DeviceKind::kDevice) {
        if (kind == DeviceKind::kUnknown && unknown.empty()) unknown = Text(src, call);
        continue;
      }
    }
    if (a->star_star) continue;
    ++copies;
    TSNode nb = KeywordValue(src, call, "non_blocking");
    if (IsNull(nb) && static_cast<size_t>(a->positional) > nb_index) nb = a->items[nb_index];
    if (IsNull(nb)) {
      for (auto& e : InsertKeywords(src, *a, {"non_blocking=True"})) edits.push_back(e);
    } else if (CompactNode(src, nb) == "False") {
      edits.push_back({Range(nb), "True"});
    }
  }
  if (copies == 0) {
    if (to_cpu) {
      return c.Error(
          "the copy goes to the CPU; non_blocking=True would let the host read the "
          "data before it arrives");
    }
    if (!unknown.empty()) return c.Error("cannot tell that `" + unknown + "` moves to a device");
    return c.Error("no .to(device) or .cuda() copy here");
  }
  // pin_memory=True on the DataLoader the enclosing loop iterates.
  bool loader_seen = false;
  for (TSNode loop = EnclosingLoop(c.stmt); !IsNull(loop); loop = EnclosingLoop(loop)) {
    if (NodeType(loop) != "for_statement") continue;
    StatusOr<TSNode> loader = FindLoaderCall(c, loop);
    if (!loader.ok()) continue;
    auto la = ReadArgs(*loader);
    if (!la || la->star_star) break;
    loader_seen = true;
    TSNode pin = KeywordValue(src, *loader, "pin_memory");
    if (IsNull(pin)) {
      for (auto& e : InsertKeywords(src, *la, {"pin_memory=True"})) edits.push_back(e);
    } else if (CompactNode(src, pin) == "False") {
      edits.push_back({Range(pin), "True"});
    }
    break;
  }
  if (edits.empty()) return Fixes{};
  if (loader_seen) {
    return Fixes{
        MakeFix("Copy with non_blocking=True from pinned memory (pin_memory=True on the "
                "DataLoader)",
                edits, true)};
  }
  return Fixes{MakeFix("Copy with non_blocking=True (the host tensor must be pinned to overlap)",
                       edits, false)};
}

}  // namespace

const QuickFixRecipe& PinMemoryNonBlocking() {
  static const QuickFixRecipe k{"pin-memory-non-blocking", {"TTA003"}, FixPinnedCopy};
  return k;
}

}  // namespace ttap::fixes
