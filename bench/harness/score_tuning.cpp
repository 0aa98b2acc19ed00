// ChooseScoreTuning (score_tuning.h): the score parts and flag threshold chosen on validation.
#include "bench/harness/score_tuning.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "bench/harness/eval_metrics.h"

namespace ttap {

StatusOr<ScoreTuning> ChooseScoreTuning(const WindowModel& model,
                                        const std::vector<TrainExample>& val, std::string* report,
                                        std::string* flag_report) {
  struct Scored {
    int label;
    const std::vector<int32_t>* categories;
    std::vector<WindowPrediction> preds;
  };
  std::vector<Scored> scored;
  for (const TrainExample& ex : val) {
    TTAP_ASSIGN_OR_RETURN(std::vector<WindowPrediction> p, model.Score(ex.tensors));
    scored.push_back({ex.label, &ex.categories, std::move(p)});
  }
  if (scored.empty()) return Status::Error("no validation traces to choose the score parts on");
  std::string best_parts;
  double best = -1;
  for (const char* parts : kScoreParts) {
    const std::array<bool, 3> mask = ScorePartsMask(parts);
    std::vector<double> ts, ws;
    std::vector<int> tl, wl;
    for (const Scored& s : scored) {
      double sum = 0;
      for (size_t w = 0; w < s.preds.size(); ++w) {
        const WindowPrediction& p = s.preds[w];
        const double v = CombineScoreParts(p, mask);
        sum += v;
        const int32_t k = w < s.categories->size() ? (*s.categories)[w] : -1;
        if (k < 0) continue;
        ws.push_back(v);
        wl.push_back(k > 0 ? 1 : 0);
      }
      if (s.label < 0 || s.preds.empty()) continue;
      ts.push_back(sum / static_cast<double>(s.preds.size()));
      tl.push_back(s.label);
    }
    const double ta = AucRoc(ts, tl), wa = AucRoc(ws, wl);
    const double q = (std::isfinite(ta) ? ta : 0) + (std::isfinite(wa) ? wa : 0);
    char line[128];
    std::snprintf(line, sizeof(line), "%s%s %.3f/%.3f", report->empty() ? "" : ", ", parts, ta, wa);
    *report += line;
    if (q > best + 1e-9) {  // ties keep the earlier entry of kScoreParts
      best = q;
      best_parts = parts;
    }
  }
  ScoreTuning tuning;
  tuning.parts = best_parts;
  // The flag threshold: few windows known to hold nothing may reach it.
  const std::array<bool, 3> mask = ScorePartsMask(best_parts);
  std::vector<double> none_scores, labelled_scores;
  for (const Scored& s : scored) {
    for (size_t w = 0; w < s.preds.size() && w < s.categories->size(); ++w) {
      const int32_t k = (*s.categories)[w];
      const double v = CombineScoreParts(s.preds[w], mask);
      if (k == 0) none_scores.push_back(v);
      if (k > 0) labelled_scores.push_back(v);
    }
  }
  double flag = kMinFlagThreshold;
  if (!none_scores.empty()) {
    std::sort(none_scores.begin(), none_scores.end());
    const size_t at = std::min(none_scores.size() - 1,
                               static_cast<size_t>(std::ceil(kFlagQuantile * none_scores.size())));
    flag = std::clamp(none_scores[at], kMinFlagThreshold, kMaxFlagThreshold);
  }
  tuning.flag_threshold = flag;
  size_t none_flagged = 0, labelled_flagged = 0;
  for (double v : none_scores) none_flagged += v >= flag;
  for (double v : labelled_scores) labelled_flagged += v >= flag;
  char line[256];
  std::snprintf(line, sizeof(line),
                "flag threshold %.3f: flags %zu of %zu windows known to hold nothing, %zu of %zu "
                "labelled ones",
                flag, none_flagged, none_scores.size(), labelled_flagged, labelled_scores.size());
  *flag_report = line;
  return tuning;
}

}  // namespace ttap
