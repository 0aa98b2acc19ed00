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

// StallTrace plus, in every step under the same `train.py(LINE)` frame, two fp32 SIMT kernels,
// a matrix product's and a convolution's (aten::mm, aten::cudnn_convolution): two TTA009
// findings on one line (TF32 may be on for one kind and not the other).
inline std::string StallTraceWithTwoFp32Kernels(int line = 12) {
  std::string t = StallTrace(line);
  std::string ev;
  int corr = 5000;
  for (int s = 0; s < 3; ++s) {
    const double base = 1000 + s * 10000;
    const char* ops[2] = {"aten::mm", "aten::cudnn_convolution"};
    const char* kernels[2] = {"volta_sgemm_128x64_nn", "volta_scudnn_128x64_relu_interior_nn_v1"};
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

namespace ttap_test {

// One rank of a three-rank job: four steps of a 4 ms GEMM (`train.py(9)`) and an all_reduce
// (`train.py(10)`) that ends on every rank when the last rank arrives; rank 1 first loads its
// batch on the main thread for 5 ms (`train.py(8)`, a `for batch in loader:` loop), so ranks 0
// and 2 wait 5 ms a step in the all_reduce for it.
inline std::string JobRankTrace(int rank) {
  std::string ev;
  auto add = [&](const std::string& e) { ev += (ev.empty() ? "" : ",\n") + e; };
  char buf[512];
  int corr = 1;
  auto frame = [&](int line, double ts, double dur) {
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"python_function","name":"train.py(%d): <module>","pid":1,"tid":1,"ts":%.0f,"dur":%.0f})",
        line, ts, dur);
    add(buf);
  };
  auto launch = [&](const char* kernel, double ts, double gts, double gdur, int stream) {
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%.0f,"dur":10,"args":{"correlation":%d}})",
        ts, corr);
    add(buf);
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"kernel","name":"%s","pid":0,"tid":%d,"ts":%.0f,"dur":%.0f,"args":{"correlation":%d,"stream":%d,"device":0}})",
        kernel, stream, gts, gdur, corr, stream);
    add(buf);
    ++corr;
  };
  for (int k = 0; k < 4; ++k) {
    const double base = 1000 + 20000.0 * k;
    const double load = rank == 1 ? 5000 : 0;
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":1,"tid":1,"ts":%.0f,"dur":11150})",
        k + 1, base);
    add(buf);
    if (rank == 1) {
      frame(8, base + 40, load + 20);
      std::snprintf(
          buf, sizeof(buf),
          R"({"ph":"X","cat":"user_annotation","name":"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__","pid":1,"tid":1,"ts":%.0f,"dur":%.0f})",
          base + 50, load);
      add(buf);
    }
    frame(9, base + 90 + load, 30);
    launch("volta_sgemm_128x64_nn", base + 100 + load, base + 150 + load, 4000, 7);
    const double arrive = base + 5100 + load, end = base + 11100;
    frame(10, arrive - 110, end + 40 - (arrive - 110));
    launch("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ncclWork*)", arrive - 100, arrive,
           end - arrive, 13);
    std::snprintf(
        buf, sizeof(buf),
        R"({"ph":"X","cat":"cuda_runtime","name":"cudaStreamSynchronize","pid":1,"tid":1,"ts":%.0f,"dur":%.0f,"args":{"correlation":%d}})",
        arrive, end + 20 - arrive, corr++);
    add(buf);
  }
  return "{\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(rank) +
         ", \"world_size\": 3},\n\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA "
         "A100-SXM4-80GB\", \"computeMajor\": 8, \"computeMinor\": 0}],\n\"traceEvents\": [\n" +
         ev + "\n]}";
}

// The training script JobRankTrace's frames name.
inline const char* kJobTrainPy =
    "import torch\n"
    "import torch.distributed as dist\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    "loader = DataLoader(make_dataset(), batch_size=32)\n"
    "model = make_model()\n"
    "\n"
    "for batch in loader:\n"
    "    loss = model(batch)\n"
    "    dist.all_reduce(loss)\n";

}  // namespace ttap_test
