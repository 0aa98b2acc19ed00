// `ttap gen --out DIR --seed S [--count N] [--bases PATH...] [--split-seed S2]
// [--only-splits train,val] [--weak-families LIST]` (gen_command.h): the labelled benchmark.
// Simulated CV traces (bench/harness/trace_sim.h) for every task, backbone variant and hardware
// profile, plus, when bases are given, jittered copies of real traces with injected anti-patterns
// (bench/harness/trace_inject.h). Assigns splits by workload group and labels balanced within each
// group, keeps the families no rule covers that are not weak out of the train and val groups,
// validates every trace it writes, records what real bases already show ("pre-existing"), and
// prints the simulator's realism against the real bases. Called by cli.cpp.
#include "bench/harness/gen_command.h"

#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "analysis/base/parallel.h"
#include "analysis/causal/causal_graph.h"
#include "analysis/load/trace_loader.h"
#include "analysis/rules/rules.h"
#include "bench/harness/labels.h"
#include "bench/harness/trace_edit.h"
#include "bench/harness/trace_inject.h"
#include "bench/harness/trace_sim.h"
#include "server/cli_util.h"

namespace ttap {

namespace {

bool WriteGzip(const std::string& path, const std::string& data) {
  gzFile f = gzopen(path.c_str(), "wb4");
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

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out);
}

bool MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    std::fprintf(stderr, "ttap: error: cannot create %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  return true;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string StripTraceSuffix(std::string name) {
  for (const char* suffix : {".gz", ".json", ".pt.trace"}) {
    const size_t n = std::strlen(suffix);
    if (name.size() > n && name.compare(name.size() - n, n, suffix) == 0) {
      name.resize(name.size() - n);
    }
  }
  return name;
}

// The workload group of a real base: the tokens of its file name without rank/worker/step
// numbers, hardware names, snapshot dates and numbers, so that every rank of one job and one
// model on several GPUs fall into one group. A file name that says nothing else (worker0.pt.
// trace.json) takes its folder's name.
std::string GroupTokens(std::string n) {
  for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const size_t at = n.find('@');
  if (at != std::string::npos) n.resize(at);
  static const std::set<std::string> kDrop = {
      "h100", "mi300", "mi210",  "mi250", "a100",   "v100", "pt",   "trace", "json",   "gz",
      "step", "rank",  "worker", "input", "output", "base", "test", "tar",   "before", "after"};
  std::string out, token;
  auto flush = [&] {
    bool numbered = false;  // worker0, rank7, 1016002
    size_t digits = 0;
    for (char c : token) digits += std::isdigit(static_cast<unsigned char>(c)) ? 1 : 0;
    for (const char* prefix : {"worker", "rank", "step"}) {
      numbered = numbered || (token.rfind(prefix, 0) == 0 && digits > 0);
    }
    if (!token.empty() && !kDrop.count(token) && !numbered && digits != token.size()) {
      out += (out.empty() ? "" : "-") + token;
    }
    token.clear();
  };
  for (char c : n) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      token += c;
    } else {
      flush();
    }
  }
  flush();
  return out;
}

std::string WorkloadGroupOf(const std::string& path) {
  std::string g = GroupTokens(BaseName(path));
  if (g.empty()) {
    const size_t slash = path.find_last_of('/');
    g = GroupTokens(slash == std::string::npos ? "" : BaseName(path.substr(0, slash)));
  }
  return "real/" + (g.empty() ? std::string("unnamed") : g);
}

std::string Slug(const std::string& s) {
  std::string o;
  for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return o;
}

std::string HardwareOf(const Trace& t) {
  for (const DeviceInfo& d : t.devices) {
    if (d.used && !d.name.empty()) return d.name;
  }
  return t.devices.empty() ? "unknown" : t.devices.front().name;
}

struct Base {
  std::string path, name, group, hardware;
  std::unique_ptr<Trace> trace;
  ValidationReport report;             // of the base itself, written by our writer
  std::set<std::string> pre_existing;  // codes the rules find (warning or worse) in the base
};

struct Plan {
  long long index = 0;
  bool simulated = true;
  SimSpec sim;
  size_t base = 0;
  std::string group, split, stem;
  bool anti = false;
  uint64_t seed = 0;
  double severity = 0.5;
};

struct Outcome {
  bool ok = true;
  std::string error;
  std::vector<std::string> codes;
  uint64_t bytes = 0;
  TraceProfile profile;
  bool anti = false;
};

// A label's family: "catalogue" (a rule covers it), "no-rule" (no rule covers it; it also
// appears in the train and val groups, where training sees only the trace label) or "unseen"
// (no rule covers it and it appears only in the held-out splits: zero-shot).
std::string Family(const std::string& code, const std::set<std::string>& weak_families) {
  if (code.rfind("TTX", 0) != 0) return "catalogue";
  return weak_families.count(code) ? "no-rule" : "unseen";
}

class Generator {
 public:
  // |split_seed| decides which workload group lands in which split, |seed| everything else, so
  // that datasets of several seeds can share one split (more training traces of the same groups).
  Generator(std::string out, uint64_t seed, uint64_t split_seed)
      : out_(std::move(out)), seed_(seed), split_seed_(split_seed) {}

  bool AddBases(const std::vector<std::string>& paths, double max_mb) {
    std::vector<std::string> files;
    for (const std::string& p : paths) {
      struct stat st;
      if (stat(p.c_str(), &st) != 0) {
        std::fprintf(stderr, "ttap: error: --bases %s: %s\n", p.c_str(), std::strerror(errno));
        return false;
      }
      if (S_ISDIR(st.st_mode)) {
        for (const std::string& f : ListTraceFiles(p)) files.push_back(f);
      } else {
        files.push_back(p);
      }
    }
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      LoadOptions o;
      o.threads = 2;
      auto t = LoadTrace(f, o);
      if (!t.ok()) {
        std::fprintf(stderr, "ttap gen: base %s skipped: %s\n", BaseName(f).c_str(),
                     t.status().message().c_str());
        continue;
      }
      std::unique_ptr<Trace> trace = std::move(t.value());
      if (static_cast<double>(trace->stats.json_bytes) > max_mb * 1048576.0) {
        std::fprintf(stderr, "ttap gen: base %s skipped: %.0f MB is over --max-base-mb %.0f\n",
                     BaseName(f).c_str(), trace->stats.json_bytes / 1048576.0, max_mb);
        continue;
      }
      // Usable when at least one injector can work on it (it has a launching thread and steps
      // or ops to cut into).
      const EditableTrace editable = ToEditable(*trace);
      EditableTrace probe = editable;
      std::vector<InjectedInterval> iv;
      std::string why;
      InjectionSpec spec;
      spec.code = "TTA008";
      if (!InjectAntiPattern(&probe, spec, &iv, &why)) {
        std::fprintf(stderr, "ttap gen: base %s skipped: %s\n", BaseName(f).c_str(), why.c_str());
        continue;
      }
      Base b;
      b.path = f;
      b.name = StripTraceSuffix(BaseName(f));
      b.group = WorkloadGroupOf(f);
      b.hardware = HardwareOf(*trace);
      const std::string json = WriteKineto(editable);
      auto back = LoadTraceFromMemory(json, b.name, o);
      if (!back.ok()) continue;
      b.report = ValidateTrace(*back.value(), json);
      RuleResult rr = RunRules(*trace, {});
      // A base whose GPU mostly waits for what the trace does not record (streams held far
      // beyond their launches, e.g. HTA's negative_queue_length fixture) has no measurable truth:
      // the injector's reflow and ttap's replay would each guess what the hidden dependency does
      // when the CPU moves.
      const int64_t path_ns = rr.time.overall.total();
      const int64_t hidden_ns = rr.time.overall.ns[static_cast<int>(Cause::kGpuWait)];
      if (path_ns > 0 && hidden_ns > path_ns / 4) {
        std::fprintf(stderr,
                     "ttap gen: base %s skipped: GPU waits the trace does not explain are %.0f%% "
                     "of its critical path\n",
                     BaseName(f).c_str(), 100.0 * hidden_ns / path_ns);
        continue;
      }
      for (const Finding& fd : rr.findings) {
        if (fd.severity == Severity::kError || fd.severity == Severity::kWarning) {
          b.pre_existing.insert(fd.code);
        }
      }
      b.trace = std::move(trace);
      bases_.push_back(std::move(b));
    }
    return true;
  }

  void PlanTraces(long long count) {
    std::mt19937_64 rng(seed_);
    // Splits: simulated seen tasks by backbone variant, unseen tasks whole; real bases by group.
    std::set<std::string> real_groups, clean_groups;
    for (const Base& b : bases_) {
      real_groups.insert(b.group);
      if (b.pre_existing.empty()) clean_groups.insert(b.group);
    }
    real_split_ =
        SplitRealGroups({real_groups.begin(), real_groups.end()}, clean_groups, split_seed_);
    const std::set<std::string> unseen_tasks = {"pose", "depth", "generation"};
    std::mt19937_64 split_rng(split_seed_);
    for (const std::string& task : SimTasks()) {
      std::vector<std::string> order = {"train", "train", "val", "test"};
      std::vector<std::string> unused = order;  // keeps |rng|'s stream as when it drew the order
      std::shuffle(unused.begin(), unused.end(), rng);
      std::shuffle(order.begin(), order.end(), split_rng);
      for (size_t v = 0; v < SimVariants().size(); ++v) {
        sim_split_["sim/" + task + "/" + SimVariants()[v]] =
            unseen_tasks.count(task) ? "unseen" : order[v];
      }
    }
    const long long injected = bases_.empty() ? 0 : std::llround(static_cast<double>(count) * 0.4);
    const long long simulated = count - injected;
    const auto& tasks = SimTasks();
    const auto& hws = SimHardware();
    std::vector<Plan> all;
    for (long long i = 0; i < count; ++i) {
      Plan p;
      p.index = i;
      p.seed = rng();
      p.severity = std::uniform_real_distribution<double>(0.05, 1.0)(rng);
      if (i < simulated) {
        p.simulated = true;
        SimSpec& s = p.sim;
        s.task = tasks[i % tasks.size()];
        s.variant = static_cast<int>((i / tasks.size()) % SimVariants().size());
        s.hardware = hws[(i / (tasks.size() * SimVariants().size()) + i) % hws.size()];
        s.training = std::uniform_int_distribution<int>(0, 3)(rng) != 0;
        s.steps = s.task == "generation" ? 8 : 5;
        s.seed = p.seed;
        s.severity = p.severity;
        p.group = "sim/" + s.task + "/" + SimVariants()[s.variant];
        p.split = sim_split_[p.group];
        p.stem =
            s.task + "_" + SimVariants()[s.variant] + "_" + s.hardware + "_" + std::to_string(i);
      } else {
        p.simulated = false;
        p.base = static_cast<size_t>((i - simulated) % static_cast<long long>(bases_.size()));
        const Base& b = bases_[p.base];
        p.group = b.group;
        p.split = real_split_[b.group];
        p.stem = "real_" + Slug(b.name) + "_" + std::to_string(i);
      }
      all.push_back(p);
    }
    AssignTraceLabels(&all, &rng);
    for (Plan& p : all) {
      if (p.simulated && p.anti) ChooseSimulatedAntiPatterns(&p, &rng);
      if (only_splits_.empty() || only_splits_.count(p.split)) plans_.push_back(std::move(p));
    }
  }

  // Which traces get anti-patterns: half of every workload group, balanced within each hardware
  // profile (simulated) or base trace (real), so that neither the workload, the hardware nor the
  // base says whether a trace is clean. (The label used to follow the plan index's parity, which
  // made whole groups clean or anti-pattern: a detector could score the workload and win.)
  static void AssignTraceLabels(std::vector<Plan>* plans, std::mt19937_64* rng) {
    std::map<std::string, std::map<std::string, std::vector<size_t>>> strata;
    for (size_t k = 0; k < plans->size(); ++k) {
      const Plan& p = (*plans)[k];
      strata[p.group][p.simulated ? p.sim.hardware : std::to_string(p.base)].push_back(k);
    }
    for (auto& [group, by_stratum] : strata) {
      bool anti = ((*rng)() & 1) != 0;
      for (auto& [stratum, members] : by_stratum) {
        std::shuffle(members.begin(), members.end(), *rng);
        for (size_t k : members) {
          (*plans)[k].anti = anti;
          anti = !anti;
        }
      }
    }
  }

  // One or two catalogue anti-patterns the simulator can inject into this task; sometimes a
  // family no rule covers instead or besides: in the held-out splits any of them, in the train
  // and val groups only the weak families (--weak-families), so that the others stay zero-shot.
  void ChooseSimulatedAntiPatterns(Plan* p, std::mt19937_64* rng) const {
    SimSpec& s = p->sim;
    std::vector<std::string> ok;
    for (const std::string c : {"TTA001", "TTA002", "TTA005", "TTA006", "TTA009"}) {
      if (SimCanInject(s, c)) ok.push_back(c);
    }
    std::shuffle(ok.begin(), ok.end(), *rng);
    ok.resize(std::min<size_t>(ok.size(), std::uniform_int_distribution<size_t>(1, 2)(*rng)));
    std::vector<std::string> families;
    for (const std::string& f : SimUnseenFamilies()) {
      if (p->split == "test" || p->split == "unseen" || weak_families_.count(f)) {
        families.push_back(f);
      }
    }
    if (families.empty()) {
      s.anti_patterns = ok;
      return;
    }
    const double r = std::uniform_real_distribution<double>(0, 1)(*rng);
    const std::string fam =
        families[std::uniform_int_distribution<size_t>(0, families.size() - 1)(*rng)];
    if (r < 0.4) {
      ok = {fam};
    } else if (r < 0.6) {
      ok.resize(1);
      ok.push_back(fam);
    }
    s.anti_patterns = ok;
  }
  // Families no rule covers that also appear in the train and val groups (trace labels teach
  // them; `ttap train` does not use where they are). The rest appear only in held-out splits.
  void SetWeakFamilies(std::set<std::string> families) { weak_families_ = std::move(families); }
  // Also write each injected copy's counterfactual (the trace its truth is measured against) to
  // DIR/counterfactual, to read a miss against what the injector says the fix leaves.
  void KeepCounterfactuals(bool keep) { keep_counterfactuals_ = keep; }
  // Writes only the traces of these splits (all when empty); planning is unchanged, so the traces
  // written are those a full run writes.
  void KeepOnlySplits(std::set<std::string> splits) { only_splits_ = std::move(splits); }

  int Run(unsigned threads) {
    if (!MakeDir(out_) || !MakeDir(out_ + "/labels") || !MakeDir(out_ + "/scripts")) return 2;
    if (keep_counterfactuals_ && !MakeDir(out_ + "/counterfactual")) return 2;
    for (const Base& b : bases_) {
      WriteText(out_ + "/scripts/train_" + Slug(b.group.substr(5)) + ".py",
                GeneratedScript(b.group));
    }
    outcomes_.resize(plans_.size());
    ParallelFor(plans_.size(), threads, [&](size_t k) { outcomes_[k] = Make(plans_[k]); });
    return 0;
  }

  int Report(double seconds) {
    int failed = 0;
    uint64_t bytes = 0;
    std::map<std::string, int> per_code, per_split, per_split_anti;
    int clean = 0, anti = 0, injected = 0;
    for (size_t k = 0; k < plans_.size(); ++k) {
      const Outcome& o = outcomes_[k];
      if (!o.ok) {
        ++failed;
        std::fprintf(stderr, "ttap gen: %s: %s\n", plans_[k].stem.c_str(), o.error.c_str());
        continue;
      }
      bytes += o.bytes;
      (o.anti ? anti : clean)++;
      injected += plans_[k].simulated ? 0 : 1;
      per_split[plans_[k].split]++;
      if (o.anti) per_split_anti[plans_[k].split]++;
      for (const std::string& c : o.codes) per_code[c]++;
    }
    std::string mix, splits;
    for (const auto& [c, n] : per_code) mix += " " + c + "=" + std::to_string(n);
    for (const auto& [s, n] : per_split) {
      splits += " " + s + "=" + std::to_string(n) + " (" + std::to_string(per_split_anti[s]) +
                " with anti-patterns)";
    }
    std::printf(
        "ttap gen: %zu traces in %s (seed %llu) in %.1f s, %.1f MB: %d clean, %d with "
        "anti-patterns; %d simulated, %d from %zu real bases\n  splits:%s\n  codes:%s\n",
        plans_.size() - failed, out_.c_str(), static_cast<unsigned long long>(seed_), seconds,
        static_cast<double>(bytes) / 1048576.0, clean, anti,
        static_cast<int>(plans_.size()) - failed - injected, injected, bases_.size(),
        splits.c_str(), mix.empty() ? " none" : mix.c_str());
    const std::string realism = RealismTable();
    std::printf("%s", realism.c_str());
    WriteText(out_ + "/realism.md", realism);
    if (failed > 0) {
      std::fprintf(stderr, "ttap gen: %d trace(s) failed validation or could not be written\n",
                   failed);
      return 1;
    }
    return 0;
  }

 private:
  Outcome Make(const Plan& p) {
    Outcome o;
    EvalLabels doc;  // the labels file (bench/harness/labels.h)
    std::string json;
    ValidationReport expected;  // simulated traces must be spotless
    if (p.simulated) {
      SimTrace sim = SimulateTrace(p.sim);
      json = std::move(sim.json);
      for (const SimLabel& l : sim.labels) {
        doc.labels.push_back({l.code, Family(l.code, weak_families_), l.start_us * 1000,
                              l.end_us * 1000, l.file, l.line});
        o.codes.push_back(l.code);
      }
      doc.source = "simulated";
      doc.task = p.sim.task;
      doc.variant = SimVariants()[p.sim.variant];
      doc.hardware = p.sim.hardware;
      doc.training = p.sim.training;
    } else {
      const Base& b = bases_[p.base];
      expected = b.report;
      EditableTrace et = ToEditable(*b.trace);
      std::mt19937_64 rng(p.seed);
      Jitter(&et, &rng, std::uniform_real_distribution<double>(0.02, 0.06)(rng));
      const std::string script = "train_" + Slug(b.group.substr(5)) + ".py";
      std::vector<InjectedInterval> injected;
      const EditableTrace before_injection = et;
      InjectionSpec injected_spec;
      if (p.anti) {
        std::vector<std::string> codes = InjectableCodes();
        std::shuffle(codes.begin(), codes.end(), rng);
        // One code per real-base trace: a second surgery could move the first one's intervals.
        const size_t want = 1;
        size_t done = 0;
        for (const std::string& c : codes) {
          if (done == want) break;
          EditableTrace attempt = et;
          InjectionSpec spec;
          spec.code = c;
          spec.severity = p.severity;
          spec.seed = rng();
          spec.script = script;
          std::vector<InjectedInterval> iv;
          std::string why;
          if (!InjectAntiPattern(&attempt, spec, &iv, &why) || iv.empty()) continue;
          et = std::move(attempt);
          injected_spec = spec;
          injected.insert(injected.end(), iv.begin(), iv.end());
          ++done;
        }
      }
      json = WriteKineto(et);
      // The truth for cost estimates, from the injector's own timing (its reflow of the GPU
      // around the inserted CPU work), not from ttap's causal replay: the analysed steps' wall
      // time of this copy minus that of the same copy without the injection, or with the
      // injection in the form its fix leaves (HasFixedForm).
      std::string counterfactual;
      if (!injected.empty()) {
        counterfactual = WriteKineto(before_injection);
        if (HasFixedForm(injected_spec.code)) {
          EditableTrace fixed = before_injection;
          InjectionSpec fixed_spec = injected_spec;
          fixed_spec.fixed = true;
          std::vector<InjectedInterval> unused;
          std::string why;
          counterfactual = InjectAntiPattern(&fixed, fixed_spec, &unused, &why) ? WriteKineto(fixed)
                                                                                : std::string();
        }
      }
      if (!counterfactual.empty() && keep_counterfactuals_) {
        WriteGzip(out_ + "/counterfactual/" + p.stem + kTraceSuffix, counterfactual);
      }
      if (!counterfactual.empty()) {
        LoadOptions clo;
        clo.threads = 1;
        auto clean = LoadTraceFromMemory(counterfactual, p.stem + "-clean", clo);
        auto dirty = LoadTraceFromMemory(json, p.stem, clo);
        if (clean.ok() && dirty.ok()) {
          auto wall = [](const Trace& t, size_t* n) {
            const std::vector<StepSpan> spans = AnalysedSteps(t);
            int64_t total = 0;
            for (const StepSpan& s : spans) total += s.end_ns - s.start_ns;
            *n = spans.size();
            return total;
          };
          size_t n_clean = 0, n_dirty = 0;
          const int64_t t_clean = wall(**clean, &n_clean), t_dirty = wall(**dirty, &n_dirty);
          if (n_clean == n_dirty && n_dirty > 0) {
            doc.time_lost_us_per_step = (t_dirty - t_clean) / 1000.0 / static_cast<double>(n_dirty);
            doc.run_us_per_step = t_dirty / 1000.0 / static_cast<double>(n_dirty);
          }
        }
      }
      for (const InjectedInterval& l : injected) {
        doc.labels.push_back({l.code, "catalogue", l.start_ns, l.end_ns, l.file, l.line});
        o.codes.push_back(l.code);
      }
      doc.source = "injected";
      doc.task = b.name;
      doc.base = b.path;
      doc.hardware = b.hardware;
      doc.script = "scripts/" + script;
      doc.pre_existing_codes.assign(b.pre_existing.begin(), b.pre_existing.end());
    }
    // Validate what we are about to write: it loads, nothing skipped, causal GPU timing.
    LoadOptions lo;
    lo.threads = 1;
    auto loaded = LoadTraceFromMemory(json, p.stem, lo);
    if (!loaded.ok()) {
      o.ok = false;
      o.error = "does not load: " + loaded.status().message();
      return o;
    }
    const Trace& t = *loaded.value();
    const ValidationReport report = ValidateTrace(t, json);
    if (!report.ok_against(expected)) {
      o.ok = false;
      o.error =
          "validation failed: " + report.Describe() + " (allowed: " + expected.Describe() + ")";
      return o;
    }
    if (!p.simulated) {
      // What the base already shows, located in this copy: findings of the base's codes that no
      // injected label of that code explains.
      const Base& b = bases_[p.base];
      if (!b.pre_existing.empty()) {
        RuleResult rr = RunRules(t, {});
        for (const Finding& f : rr.findings) {
          if (!b.pre_existing.count(f.code)) continue;
          bool injected_here = false;
          for (const EvalLabel& l : doc.labels) injected_here = injected_here || l.code == f.code;
          if (!injected_here) doc.pre_existing.push_back({f.code, "", f.start_ns, f.end_ns, "", 0});
        }
      }
    }
    o.profile = ProfileTrace(t);
    o.anti = !doc.labels.empty();
    doc.trace = p.stem + kTraceSuffix;
    doc.anti_pattern = o.anti;
    doc.workload_group = p.group;
    doc.split = p.split;
    doc.seed = p.seed;
    doc.severity = p.severity;
    const std::string trace_path = out_ + "/" + p.stem + kTraceSuffix;
    if (!WriteGzip(trace_path, json) ||
        !WriteText(out_ + "/labels/" + p.stem + kLabelsSuffix, WriteLabelsFile(doc))) {
      o.ok = false;
      o.error = "cannot write " + trace_path;
      return o;
    }
    struct stat st;
    if (stat(trace_path.c_str(), &st) == 0) o.bytes = static_cast<uint64_t>(st.st_size);
    return o;
  }

  // Medians of the realism profile: simulated traces (per hardware) against the real bases.
  std::string RealismTable() {
    std::map<std::string, std::vector<TraceProfile>> groups;
    for (size_t k = 0; k < plans_.size(); ++k) {
      if (!outcomes_[k].ok || !plans_[k].simulated) continue;
      groups["simulated " + plans_[k].sim.hardware].push_back(outcomes_[k].profile);
      groups["simulated (all)"].push_back(outcomes_[k].profile);
    }
    for (const Base& b : bases_) groups["real bases"].push_back(ProfileTrace(*b.trace));
    auto median = [](std::vector<double> v) {
      if (v.empty()) return 0.0;
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    std::ostringstream s;
    s << "\nSimulator realism (medians over traces; `ttap gen` writes this to realism.md):\n\n"
      << "| traces | n | kernel us p10/p50/p90 | launch delay us p50/p90 | events/step | GPU busy "
         "| cpu_op | python | runtime | kernel | memcpy |\n|---|---:|---|---|---:|---:|---:|---:|"
         "---:|---:|---:|\n";
    for (const auto& [name, ps] : groups) {
      auto col = [&](auto f) {
        std::vector<double> v;
        for (const TraceProfile& p : ps) v.push_back(f(p));
        return median(v);
      };
      auto kind = [&](const char* k) {
        return col([&](const TraceProfile& p) {
          auto it = p.kind_share.find(k);
          return it == p.kind_share.end() ? 0.0 : it->second;
        });
      };
      char line[512];
      std::snprintf(
          line, sizeof(line),
          "| %s | %zu | %.1f / %.1f / %.1f | %.1f / %.1f | %.0f | %.0f%% | %.0f%% | %.0f%% "
          "| %.0f%% | %.0f%% | %.1f%% |\n",
          name.c_str(), ps.size(), col([](auto& p) { return p.kernel_us_p10; }),
          col([](auto& p) { return p.kernel_us_p50; }),
          col([](auto& p) { return p.kernel_us_p90; }),
          col([](auto& p) { return p.launch_delay_us_p50; }),
          col([](auto& p) { return p.launch_delay_us_p90; }),
          col([](auto& p) { return p.events_per_step; }),
          100 * col([](auto& p) { return p.gpu_busy_share; }), 100 * kind("cpu_op"),
          100 * kind("python_function"), 100 * kind("runtime"), 100 * kind("kernel"),
          100 * kind("memcpy"));
      s << line;
    }
    return s.str();
  }

  std::string out_;
  uint64_t seed_, split_seed_;
  std::set<std::string> only_splits_;
  bool keep_counterfactuals_ = false;
  std::set<std::string> weak_families_;
  std::vector<Base> bases_;
  std::map<std::string, std::string> real_split_, sim_split_;
  std::vector<Plan> plans_;
  std::vector<Outcome> outcomes_;
};

}  // namespace

std::map<std::string, std::string> SplitRealGroups(std::vector<std::string> groups,
                                                   const std::set<std::string>& clean_groups,
                                                   uint64_t seed) {
  std::sort(groups.begin(), groups.end());
  std::mt19937_64 rng(seed ^ 0x5851F42D4C957F2Dull);
  std::shuffle(groups.begin(), groups.end(), rng);
  std::map<std::string, std::string> split;
  const size_t n = groups.size();
  const size_t unseen = (n + 3) / 4;
  const size_t rest = n - unseen;
  const size_t test = std::max<size_t>(rest >= 3 ? 1 : 0, (rest * 3 + 5) / 10);
  const size_t val = rest >= 4 ? std::max<size_t>(1, rest / 5) : 0;
  for (size_t i = 0; i < n; ++i) {
    split[groups[i]] = i < unseen                ? "unseen"
                       : i < unseen + test       ? "test"
                       : i < unseen + test + val ? "val"
                                                 : "train";
  }
  // Stratify the groups with a clean base: validation gets one, from train or test, whichever
  // keeps one of its own, trading places with the last val group in the seeded order.
  auto clean_in = [&](const char* s) {
    std::vector<const std::string*> found;
    for (const std::string& g : groups) {
      if (split[g] == s && clean_groups.count(g)) found.push_back(&g);
    }
    return found;
  };
  if (val > 0 && clean_in("val").empty()) {
    const std::string* last_val = nullptr;
    for (const std::string& g : groups) {
      if (split[g] == "val") last_val = &g;
    }
    for (const char* donor : {"train", "test"}) {
      const auto found = clean_in(donor);
      if (found.size() < 2) continue;
      split[*last_val] = donor;
      split[*found.front()] = "val";
      break;
    }
  }
  return split;
}

int RunGenCommand(const std::vector<std::string>& args) {
  std::string out;
  long long seed = -1, split_seed = -1, count = 600, threads = 2;
  double max_base_mb = 40;
  std::set<std::string> only_splits;
  bool keep_counterfactuals = false;
  std::set<std::string> weak_families = {"TTX101", "TTX103"};
  std::vector<std::string> bases;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    if (a == "--out" && has_value) {
      out = args[++i];
    } else if (a == "--seed" && has_value) {
      if (!ParseInteger(args[++i], &seed) || seed < 0) {
        return UsageError("--seed needs a number >= 0");
      }
    } else if (a == "--split-seed" && has_value) {
      if (!ParseInteger(args[++i], &split_seed) || split_seed < 0) {
        return UsageError("--split-seed needs a number >= 0");
      }
    } else if (a == "--only-splits" && has_value) {
      std::stringstream list(args[++i]);
      for (std::string s; std::getline(list, s, ',');) {
        if (s != "train" && s != "val" && s != "test" && s != "unseen") {
          return UsageError("--only-splits takes train, val, test, unseen (comma-separated)");
        }
        only_splits.insert(s);
      }
    } else if (a == "--weak-families" && has_value) {
      weak_families.clear();
      std::stringstream list(args[++i]);
      for (std::string f; std::getline(list, f, ',');) {
        if (f == "none") continue;
        if (std::find(SimUnseenFamilies().begin(), SimUnseenFamilies().end(), f) ==
            SimUnseenFamilies().end()) {
          return UsageError("--weak-families takes none or families of TTX101, TTX102, TTX103");
        }
        weak_families.insert(f);
      }
    } else if (a == "--keep-counterfactual") {
      keep_counterfactuals = true;
    } else if (a == "--count" && has_value) {
      if (!ParseInteger(args[++i], &count) || count <= 0 || count > 100000) {
        return UsageError("--count needs a positive number");
      }
    } else if (a == "--threads" && has_value) {
      if (!ParseInteger(args[++i], &threads) || threads <= 0 || threads > 64) {
        return UsageError("--threads needs a number in 1..64");
      }
    } else if (a == "--max-base-mb" && has_value) {
      long long mb = 0;
      if (!ParseInteger(args[++i], &mb) || mb <= 0) {
        return UsageError("--max-base-mb needs a number");
      }
      max_base_mb = static_cast<double>(mb);
    } else if (a == "--bases" && has_value) {
      while (i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0) bases.push_back(args[++i]);
    } else {
      return UsageError("gen: unknown or incomplete option '" + a + "'");
    }
  }
  if (out.empty()) return UsageError("gen: missing --out DIR");
  if (seed < 0) return UsageError("gen: missing --seed S");
  const auto t0 = std::chrono::steady_clock::now();
  Generator gen(out, static_cast<uint64_t>(seed),
                static_cast<uint64_t>(split_seed >= 0 ? split_seed : seed));
  gen.KeepOnlySplits(only_splits);
  gen.SetWeakFamilies(weak_families);
  gen.KeepCounterfactuals(keep_counterfactuals);
  if (!bases.empty() && !gen.AddBases(bases, max_base_mb)) return 2;
  gen.PlanTraces(count);
  if (int rc = gen.Run(static_cast<unsigned>(threads)); rc != 0) return rc;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return gen.Report(seconds);
}

}  // namespace ttap
