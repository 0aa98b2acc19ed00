// `ttap train` (train_command.h).
#include "bench/harness/train_command.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "analysis/base/parallel.h"
#include "analysis/load/trace_loader.h"
#include "analysis/model/window_tensors.h"
#include "analysis/rules/rules.h"
#include "bench/harness/eval_command.h"
#include "bench/harness/score_tuning.h"
#include "server/cli_util.h"
#include "server/window_model.h"

namespace ttap {

namespace {

// Chooses the window score's parts and flag threshold on the validation traces and rewrites |out|
// with them.
int ChooseAndWriteScoreTuning(const WindowModel& model, const std::vector<TrainExample>& val,
                              const std::string& out) {
  std::string report, flag_report;
  auto tuning = ChooseScoreTuning(model, val, &report, &flag_report);
  if (!tuning.ok()) {
    std::fprintf(stderr, "ttap: error: train: %s\n", tuning.status().message().c_str());
    return 2;
  }
  Status saved = model.SaveTuned(tuning.value(), out);
  if (!saved.ok()) {
    std::fprintf(stderr, "ttap: error: train: %s\n", saved.message().c_str());
    return 2;
  }
  std::printf(
      "ttap train: score parts chosen on %zu val traces (trace/window AUC): %s -> %s\n"
      "ttap train: %s\n",
      val.size(), report.c_str(), tuning.value().parts.c_str(), flag_report.c_str());
  return 0;
}

}  // namespace

int RunTrainCommand(const std::vector<std::string>& args) {
  std::vector<std::string> datasets;
  std::string out;
  TrainSettings settings;
  bool pre_existing_windows = false;
  bool retune = false;  // --retune: only choose the score parts of the existing --out file
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has = i + 1 < args.size();
    double v = 0;
    long long n = 0;
    if (a == "--data" && has) {
      datasets.push_back(args[++i]);
      while (datasets.back().size() > 1 && datasets.back().back() == '/')
        datasets.back().pop_back();
    } else if (a == "--out" && has) {
      out = args[++i];
    } else if (a == "--epochs" && has && ParseInteger(args[i + 1], &n) && n >= 1 && n <= 10000) {
      settings.epochs = static_cast<int>(n);
      ++i;
    } else if (a == "--seed" && has && ParseInteger(args[i + 1], &n) && n >= 0) {
      settings.seed = static_cast<uint64_t>(n);
      ++i;
    } else if (a == "--threads" && has && ParseInteger(args[i + 1], &n) && n >= 1 && n <= 256) {
      settings.threads = static_cast<int>(n);
      ++i;
    } else if (a == "--minutes" && has && ParseNumber(args[i + 1], &v) && v > 0) {
      settings.max_seconds = v * 60;
      ++i;
    } else if (a == "--pre-existing" && has &&
               (args[i + 1] == "positive" || args[i + 1] == "windows")) {
      pre_existing_windows = args[++i] == "windows";
    } else if (a == "--ablation" && has) {
      settings.ablation = args[++i];
    } else if (a == "--device" && has) {
      settings.device = args[++i];
    } else if (a == "--retune") {
      retune = true;
    } else {
      return UsageError("train: unknown or incomplete option '" + a + "'");
    }
  }
  if (datasets.empty() || out.empty()) {
    return UsageError("train: needs --data DIR and --out FILE");
  }
  for (const RuleInfo& r : RuleCatalogue()) settings.codes.push_back(r.code);
  std::unique_ptr<WindowModel> retuned;
  std::set<std::string> trained_groups;  // --retune: groups the file was trained on, if recorded
  for (const std::string& a : args) {
    static const std::set<std::string> kTrainingOnly = {"--epochs", "--seed", "--minutes",
                                                        "--pre-existing", "--ablation"};
    if (retune && kTrainingOnly.count(a)) {
      return UsageError("train: " + a +
                        " only applies to training; --retune keeps the weights (and the labelling "
                        "of pre-existing traces) the file was trained with");
    }
  }
  if (retune) {
    // The weights stay; the validation labels follow how the file was trained.
    auto m = WindowModel::Open(out, settings.device, settings.threads);
    if (!m.ok()) {
      std::fprintf(stderr, "ttap: error: train: %s\n", m.status().message().c_str());
      return 2;
    }
    retuned = std::move(m.value());
    const auto on = nlohmann::json::parse(retuned->trained_on(), nullptr, false);
    pre_existing_windows = on.is_object() && on.value("pre_existing", "") == "windows";
    if (on.is_object() && on.contains("train_groups") && on["train_groups"].is_array()) {
      for (const auto& g : on["train_groups"]) {
        if (g.is_string()) trained_groups.insert(g.get<std::string>());
      }
    }
    settings.codes = retuned->codes();
  }

  // The train and val splits. A trace whose real base already had anti-patterns (what the rules
  // found there, `pre_existing`) has those intervals labelled too, and counts as having
  // anti-patterns (--pre-existing positive, the default) or teaches through its labelled windows
  // only (--pre-existing windows: no trace-level label).
  // Several datasets (`ttap gen` with other seeds and the same --split-seed) add traces of the
  // same groups; a group may not be trained on in one and validated on in another.
  struct Item {
    EvalLabels labels;
    std::string dir;
    bool val;
    bool pre_existing;
  };
  std::vector<Item> items;
  std::set<std::string> train_groups, val_groups;
  int with_pre_existing = 0;
  std::string data;
  for (const std::string& dir : datasets) {
    data += (data.empty() ? "" : ",") + dir;
    const size_t before = items.size();
    for (const std::string& f : ListLabelFiles(dir + "/labels")) {
      auto l = ReadEvalLabels(dir + "/labels", f);
      if (!l.ok() || (l->split != "train" && l->split != "val")) continue;
      if (retune && l->split != "val") continue;
      if (retune && trained_groups.count(l->workload_group)) {
        std::fprintf(stderr,
                     "ttap: error: train: --retune: %s/labels/%s is of group %s, which the model "
                     "was trained on; use the dataset (or --split-seed) it was trained with\n",
                     dir.c_str(), f.c_str(), l->workload_group.c_str());
        return 2;
      }
      const bool pre_existing = !l->pre_existing.empty();
      if (pre_existing) {
        ++with_pre_existing;
        l->anti_pattern = true;
        l->labels.insert(l->labels.end(), l->pre_existing.begin(), l->pre_existing.end());
      }
      const bool is_val = l->split == "val";
      (is_val ? val_groups : train_groups).insert(l->workload_group);
      items.push_back({std::move(l.value()), dir, is_val, pre_existing});
    }
    if (items.size() == before) {
      std::fprintf(stderr, "ttap: error: train: no %s traces in %s/labels\n",
                   retune ? "val" : "train/val", dir.c_str());
      return 2;
    }
  }
  for (const std::string& g : val_groups) {
    if (train_groups.count(g)) {
      std::fprintf(stderr,
                   "ttap: error: train: group %s is in the train split of one dataset and the "
                   "val split of another (generate them with the same --split-seed)\n",
                   g.c_str());
      return 2;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<TrainExample> examples(items.size());
  std::atomic<int> weakly_labelled{0};
  std::vector<std::string> errors(items.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < items.size();) {
      LoadOptions lo;
      lo.threads = 1;
      auto t = LoadTrace(items[k].dir + "/" + items[k].labels.trace, lo);
      if (!t.ok()) {
        errors[k] = t.status().message();
        continue;
      }
      const Trace& trace = **t;
      TrainExample& ex = examples[k];
      ex.tensors = BuildWindowTensors(trace);
      ex.label = items[k].pre_existing && pre_existing_windows ? -1
                 : items[k].labels.anti_pattern                ? 1
                                                               : 0;
      // A label of a family no rule covers teaches through the trace label only (weak
      // supervision): where it lies is not used, so the windows of such a trace that no
      // catalogue label covers are unknown (-1) rather than clean.
      bool weak = false;
      for (const EvalLabel& l : items[k].labels.labels) {
        weak = weak || std::find(settings.codes.begin(), settings.codes.end(), l.code) ==
                           settings.codes.end();
      }
      ex.categories.assign(trace.windows.size(), weak ? -1 : 0);
      if (weak) ++weakly_labelled;
      for (size_t w = 0; w < trace.windows.size(); ++w) {
        int64_t best = 0;
        for (const EvalLabel& l : items[k].labels.labels) {
          const int64_t ov = std::min(l.end_ns, trace.windows[w].end_ns) -
                             std::max(l.start_ns, trace.windows[w].start_ns);
          auto it = std::find(settings.codes.begin(), settings.codes.end(), l.code);
          if (ov <= best || it == settings.codes.end()) continue;  // weak labels: trace only
          best = ov;
          ex.categories[w] = static_cast<int32_t>(it - settings.codes.begin()) + 1;
        }
      }
    }
  };
  RunBoth(2, work, work);
  std::vector<TrainExample> train, val;
  for (size_t k = 0; k < items.size(); ++k) {
    if (!errors[k].empty()) {
      std::fprintf(stderr, "ttap: warning: train: %s; skipped\n", errors[k].c_str());
      continue;
    }
    (items[k].val ? val : train).push_back(std::move(examples[k]));
  }
  const double load_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (retune) return ChooseAndWriteScoreTuning(*retuned, val, out);
  std::printf(
      "ttap train: %zu train and %zu val traces from %s (%d with pre-existing "
      "anti-patterns, labelled %s; %d with families no rule covers, by trace label only), "
      "featurised in %.1f s; %d epochs, seed %llu, %d threads%s%s\n",
      train.size(), val.size(), data.c_str(), with_pre_existing,
      pre_existing_windows ? "by window only" : "as such", weakly_labelled.load(), load_s,
      settings.epochs, static_cast<unsigned long long>(settings.seed), settings.threads,
      settings.ablation.empty() ? "" : ", ablation ", settings.ablation.c_str());
  std::fflush(stdout);
  nlohmann::json on;
  on["dataset"] = data;
  on["splits"] = {"train", "val"};
  std::set<std::string> groups = train_groups;
  groups.insert(val_groups.begin(), val_groups.end());
  on["groups"] = groups;
  on["train_groups"] = train_groups;
  on["train_traces"] = train.size();
  on["val_traces"] = val.size();
  on["seed"] = settings.seed;
  on["epochs"] = settings.epochs;
  on["ablation"] = settings.ablation;
  on["pre_existing"] = pre_existing_windows ? "windows" : "positive";
  settings.trained_on = on.dump();
  Status s = TrainWindowModel(train, val, settings, out, [](const std::string& line) {
    std::printf("ttap train: %s\n", line.c_str());
    std::fflush(stdout);
  });
  if (!s.ok()) {
    std::fprintf(stderr, "ttap: error: train: %s\n", s.message().c_str());
    return 2;
  }
  if (val.empty()) {
    std::printf("ttap train: no val traces: the window score keeps all three parts\n");
  } else {
    auto trained = WindowModel::Open(out, settings.device, settings.threads);
    if (!trained.ok()) {
      std::fprintf(stderr, "ttap: error: train: %s\n", trained.status().message().c_str());
      return 2;
    }
    if (const int rc = ChooseAndWriteScoreTuning(**trained, val, out); rc != 0) return rc;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("ttap train: done in %.0f s\n", total);
  return 0;
}

}  // namespace ttap
