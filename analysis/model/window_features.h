// Window features: one fixed-length vector of numbers per entry of Trace::windows (the N equal
// slices of the profiled span), for the unsupervised baselines of `ttap eval`
// (bench/harness/eval_baselines.h, bench/harness/eval_command.cpp) and the learned window scorer.
// Pure functions, no I/O, no exceptions; any thread.
//
// The features, in order (WindowFeatureNames() spells them). "Share" is the length of the union
// of the matching events' intervals clipped to the window, divided by the window's length (0..1;
// 0 for an empty window). Counts and per-event values are over the rows whose ts falls in the
// window (Window::begin..end), durations in microseconds:
//   0 log_events            log1p(number of rows)
//   1 gpu_busy_share        share of kernels, memcpys and memsets (all devices and streams)
//   2 log_kernels           log1p(number of kernels)
//   3 mean_log_kernel_us    mean of log1p(kernel duration); 0 without kernels
//   4 max_log_kernel_us     max of log1p(kernel duration); 0 without kernels
//   5 log_launch_delay_us   log1p(median of GPU start - launching runtime call's start, >= 0)
//                           over the GPU activities with a link; 0 without any
//   6 runtime_share         share of runtime and driver calls (CPU side)
//   7 log_memcpys           log1p(number of memcpys)
//   8 log_memcpy_bytes      log1p(sum of args.bytes of the memcpys)
//   9 sync_share            share of runtime/driver calls whose name contains "Synchronize"
//  10 log_distinct_names    log1p(number of distinct event names)
//  11 python_share          share of python_function events
//  12 log_cpu_ops           log1p(number of cpu_op events)
//  13 gpu_overlap_share     sum over GPU streams of each one's busy share, minus gpu_busy_share
//                           (0..1: with two streams, the share of the window both are busy)
#pragma once

#include <string>
#include <vector>

#include "analysis/model/trace.h"

namespace ttap {

constexpr int kWindowFeatureCount = 14;

// The names of the features, in the order WindowFeatures returns them.
const std::vector<std::string>& WindowFeatureNames();

// One vector of kWindowFeatureCount finite numbers per Trace::windows entry.
std::vector<std::vector<double>> WindowFeatures(const Trace& trace);

}  // namespace ttap
