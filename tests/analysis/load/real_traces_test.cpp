// Every real trace in ../shared/traces/real loads with the step count, device and rank that
// INDEX.tsv records, and HTA's temporal breakdown, comm/comp overlap and iteration count agree
// with Holistic Trace Analysis's own output (hta_reference.json). Skips when ../shared is absent.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/load/trace_loader.h"
#include "analysis/model/trace_stats.h"
#include "test_support.h"

using namespace ttap;

namespace {

struct IndexRow {
  std::string file;
  int steps = 0;
  std::string devices;
  std::string distributed;
};

std::vector<IndexRow> ReadIndex() {
  std::vector<IndexRow> rows;
  std::istringstream in(ttap_test::ReadFile(ttap_test::RealTracesDir() + "/INDEX.tsv"));
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::string> header;
  {
    std::istringstream h(line);
    std::string col;
    while (std::getline(h, col, '\t')) header.push_back(col);
  }
  while (std::getline(in, line)) {
    std::vector<std::string> cols;
    std::istringstream l(line);
    std::string col;
    while (std::getline(l, col, '\t')) cols.push_back(col);
    cols.resize(header.size());
    IndexRow r;
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == "file") r.file = cols[i];
      if (header[i] == "n_steps") r.steps = std::atoi(cols[i].c_str());
      if (header[i] == "devices") r.devices = cols[i];
      if (header[i] == "distributed") r.distributed = cols[i];
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("every shared real trace loads with its steps, devices and rank", "[real]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared/traces/real not present: skipped");
    return;
  }
  auto rows = ReadIndex();
  REQUIRE(rows.size() >= 50);
  for (const auto& row : rows) {
    INFO(row.file);
    auto trace = LoadTrace(ttap_test::RealTracesDir() + "/" + row.file);
    REQUIRE(trace.ok());
    const Trace& t = **trace;
    CHECK(t.events.size() > 0);
    CHECK(t.stats.total_skipped() == 0);
    CHECK(static_cast<int>(t.steps.size()) == row.steps);
    CHECK(t.windows.size() == 100);
    // Devices: every used device with a name appears in the index's device list.
    for (const auto& d : t.devices) {
      if (d.used && !d.name.empty()) CHECK(row.devices.find(d.name) != std::string::npos);
    }
    bool has_gpu_names = row.devices.find("NVIDIA") != std::string::npos ||
                         row.devices.find("Tesla") != std::string::npos ||
                         row.devices.find("AMD") != std::string::npos;
    std::string type = Summarize(t).device_type;
    if (row.devices.find("AMD") != std::string::npos) CHECK(type == "AMD GPU");
    if (has_gpu_names && row.devices.find("AMD") == std::string::npos && t.stats.events > 0 &&
        type != "CPU") {
      CHECK(type == "NVIDIA GPU");
    }
    // Rank: distributedInfo ("backend:rank/world"), else the file name, else 0.
    size_t colon = row.distributed.find(':');
    size_t slash = row.distributed.find('/');
    if (colon != std::string::npos && slash != std::string::npos && slash > colon + 1 &&
        row.distributed.rfind(':') == colon) {
      CHECK(t.rank == std::atoi(row.distributed.substr(colon + 1, slash - colon - 1).c_str()));
      CHECK(t.rank_source == "distributedInfo");
    } else if (t.rank_source != "distributedInfo") {
      int from_name = RankFromFileName(row.file);
      CHECK(t.rank == (from_name >= 0 ? from_name : 0));
    }
  }
}

TEST_CASE("HTA temporal breakdown and comm/comp overlap match HTA's own output", "[real][hta]") {
  if (!ttap_test::HaveShared()) {
    WARN("../shared not present: skipped");
    return;
  }
  auto ref = nlohmann::json::parse(
      ttap_test::ReadFile(ttap_test::SharedDir() + "/traces/hta_reference.json"));
  int compared = 0;
  double worst = 0;
  for (auto& [file, entry] : ref.items()) {
    INFO(file);
    auto trace = LoadTrace(ttap_test::RealTracesDir() + "/" + file);
    REQUIRE(trace.ok());
    HtaFigures h = ComputeHtaFigures(**trace);
    // Exact timestamps: HTA's figures with HTA_DISABLE_NS_ROUNDING=1 where they differ.
    const auto& block = entry.contains("no_ns_rounding") ? entry["no_ns_rounding"] : entry;
    if (block.contains("n_iterations")) CHECK(h.iterations == block["n_iterations"].get<int64_t>());
    const auto& tb = block.value("temporal_breakdown", nlohmann::json::object());
    if (tb.empty()) {
      CHECK_FALSE(h.has_gpu_events);
      continue;
    }
    const auto& r = tb.begin().value();
    double kernel = r["kernel_time_us"].get<double>();
    for (const char* key :
         {"idle_time_us", "compute_time_us", "non_compute_time_us", "kernel_time_us"}) {
      double ours = std::string(key) == "idle_time_us"      ? h.idle_time_us
                    : std::string(key) == "compute_time_us" ? h.compute_time_us
                    : std::string(key) == "kernel_time_us"  ? h.kernel_time_us
                                                            : h.non_compute_time_us;
      double theirs = r[key].get<double>();
      INFO(key << " ours " << ours << " hta " << theirs);
      CHECK(std::abs(ours - theirs) <= 0.01 * kernel);
      if (kernel > 0) worst = std::max(worst, std::abs(ours - theirs) / kernel);
    }
    const auto& overlap = block.value("comm_comp_overlap_pctg", nlohmann::json::object());
    for (auto& [rank, v] : overlap.items()) {
      if (!v.is_number()) continue;
      REQUIRE(h.comm_comp_overlap_pct.has_value());
      CHECK(std::abs(*h.comm_comp_overlap_pct - v.get<double>()) <= 0.01);
    }
    ++compared;
  }
  CHECK(compared >= 40);
  INFO("worst deviation as a share of kernel_time_us: " << worst);
  CHECK(worst < 0.01);
}
