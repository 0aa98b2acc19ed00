// Small generated traces shared by the scan and language-server tests.
#pragma once

#include <cstdio>
#include <string>

namespace ttap_test {

// Three steps whose data loading idles the GPU, under the python frame `train.py(LINE): FUNC`
// (by default `for batch in loader:` at module level, line 12).
inline std::string StallTrace(int line = 12, const std::string& function = "<module>") {
  std::string ev;
  auto add = [&](const std::string& e) { ev += (ev.empty() ? "" : ",\n") + e; };
  int corr = 1;
  for (int s = 0; s < 3; ++s) {
    double base = 1000 + s * 10000;
    char buf[512];
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%.0f,"dur":10000})",
        s, base);
    add(buf);
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"python_function","name":"train.py(%d): %s","pid":1,"tid":1,"ts":%.0f,"dur":9990})",
        line, function.c_str(), base + 1);
    add(buf);
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"python_function","name":"torch/utils/data/dataloader.py(630): __next__","pid":1,"tid":1,"ts":%.0f,"dur":6000})",
        base + 2);
    add(buf);
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":1,"tid":1,"ts":%.0f,"dur":5990})",
        base + 3);
    add(buf);
    for (int k = 0; k < 30; ++k) {
      double t = base + 6100 + k * 10;
      std::snprintf(
          buf, sizeof(buf),
          R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%.0f,"dur":5,"args":{"correlation":%d}})",
          t, corr);
      add(buf);
      std::snprintf(
          buf, sizeof(buf),
          R"({"ph":"X","cat":"kernel","name":"volta_h884gemm","pid":0,"tid":7,"ts":%.0f,"dur":120,"args":{"correlation":%d,"stream":7,"device":0}})",
          base + 6110 + k * 125, corr);
      add(buf);
      ++corr;
    }
  }
  return "{\"traceEvents\": [\n" + ev + "\n]}";
}

}  // namespace ttap_test

namespace ttap_test {

// StallTrace plus, in every step under the same `train.py(LINE)` frame, two fp32 SIMT matmuls
// launched by different ops (aten::mm, aten::addmm): two TTA009 findings on one line.
inline std::string StallTraceWithTwoMatmuls(int line = 12) {
  std::string t = StallTrace(line);
  std::string ev;
  int corr = 5000;
  for (int s = 0; s < 3; ++s) {
    const double base = 1000 + s * 10000;
    const char* ops[2] = {"aten::mm", "aten::addmm"};
    const char* kernels[2] = {"volta_sgemm_128x64_nn", "volta_sgemm_64x64_nn"};
    for (int k = 0; k < 2; ++k) {
      const double at = base + 6450 + k * 30;
      char buf[1024];
      std::snprintf(
          buf, sizeof(buf),
          R"(,{"ph":"X","cat":"cpu_op","name":"%s","pid":1,"tid":1,"ts":%.0f,"dur":20},)"
          R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%.0f,"dur":5,"args":{"correlation":%d}},)"
          R"({"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":7,"ts":%.0f,"dur":400,"args":{"correlation":%d,"stream":7,"device":0}})",
          ops[k], at, at + 5, corr, kernels[k], base + 9860 + k * 410, corr);
      ev += buf;
      ++corr;
    }
  }
  return t.substr(0, t.rfind("\n]}")) + ev + "\n]}";
}

}  // namespace ttap_test
