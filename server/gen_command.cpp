// `ttap gen --out DIR --seed S [--count N]` (gen_command.h): cycles tasks and hardware, makes
// about half the traces clean and half with 1-2 injected anti-patterns at random severities, and
// writes DIR/<task>_<hw>_<i>.pt.trace.json.gz with DIR/labels/<task>_<hw>_<i>.labels.json. Called
// by cli.cpp.
#include "server/gen_command.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>

#include "analysis/trace_sim.h"
#include "server/cli_util.h"

namespace ttap {

namespace {

bool WriteGzip(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb6");
  if (!f) return false;
  size_t off = 0;
  while (off < data.size()) {
    unsigned n = static_cast<unsigned>(std::min<size_t>(data.size() - off, 1u << 20));
    if (gzwrite(f, data.data() + off, n) != static_cast<int>(n)) {
      gzclose(f);
      return false;
    }
    off += n;
  }
  return gzclose(f) == Z_OK;
}

bool ParseInt(const std::string& s, long long* out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0) return false;
  *out = v;
  return true;
}

}  // namespace

int RunGenCommand(const std::vector<std::string>& args) {
  std::string out;
  long long seed = -1, count = 40;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--out" && has_value) {
      out = args[++i];
    } else if (a == "--seed" && has_value) {
      if (!ParseInt(args[++i], &seed) || seed < 0) return UsageError("--seed needs a number >= 0");
    } else if (a == "--count" && has_value) {
      if (!ParseInt(args[++i], &count) || count <= 0 || count > 100000) {
        return UsageError("--count needs a positive number");
      }
    } else {
      return UsageError("gen: unknown or incomplete option '" + a + "'");
    }
  }
  if (out.empty()) return UsageError("gen: missing --out DIR");
  if (seed < 0) return UsageError("gen: missing --seed S");
  if (mkdir(out.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "ttap: error: cannot create %s: %s\n", out.c_str(), std::strerror(errno));
    return 2;
  }
  const std::string label_dir = out + "/labels";
  if (mkdir(label_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "ttap: error: cannot create %s: %s\n", label_dir.c_str(),
                 std::strerror(errno));
    return 2;
  }
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  const auto& tasks = SimTasks();
  const auto& hws = SimHardware();
  const std::vector<std::string> codes = {"TTA001", "TTA002", "TTA005", "TTA006", "TTA009"};
  int clean = 0, labelled = 0;
  std::map<std::string, int> per_code;
  for (long long i = 0; i < count; ++i) {
    SimSpec spec;
    spec.task = tasks[i % tasks.size()];
    spec.hardware = hws[(i / tasks.size() + i) % hws.size()];
    spec.training = std::uniform_int_distribution<int>(0, 3)(rng) != 0;  // 3/4 training
    spec.steps = spec.task == "generation" ? 8 : 5;
    spec.seed = rng();
    spec.severity = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
    if (i % 2 == 1) {
      std::vector<std::string> ok;
      for (const auto& c : codes) {
        if (SimCanInject(spec, c)) ok.push_back(c);
      }
      std::shuffle(ok.begin(), ok.end(), rng);
      int n = std::uniform_int_distribution<int>(1, 2)(rng);
      ok.resize(std::min<size_t>(ok.size(), n));
      spec.anti_patterns = ok;
    }
    SimTrace sim = SimulateTrace(spec);
    std::string base = out + "/" + spec.task + "_" + spec.hardware + "_" + std::to_string(i);
    if (!WriteGzip(base + ".pt.trace.json.gz", sim.json)) {
      std::fprintf(stderr, "ttap: error: cannot write %s.pt.trace.json.gz\n", base.c_str());
      return 2;
    }
    // Labels go to DIR/labels/ so that `ttap scan DIR` (which reads every *.json) sees traces only.
    const std::string label_path = out + "/labels/" + spec.task + "_" + spec.hardware + "_" +
                                   std::to_string(i) + ".labels.json";
    std::ofstream labels(label_path, std::ios::binary);
    labels << LabelsToJson(spec, sim);
    if (!labels) {
      std::fprintf(stderr, "ttap: error: cannot write %s\n", label_path.c_str());
      return 2;
    }
    if (sim.labels.empty()) {
      ++clean;
    } else {
      ++labelled;
      for (const auto& c : spec.anti_patterns) per_code[c]++;
    }
  }
  std::string mix;
  for (const auto& [c, n] : per_code) mix += " " + c + "=" + std::to_string(n);
  std::printf("ttap gen: %lld traces in %s (seed %lld): %d clean, %d with anti-patterns (%s)\n",
              count, out.c_str(), seed, clean, labelled, mix.empty() ? "none" : mix.c_str() + 1);
  return 0;
}

}  // namespace ttap
