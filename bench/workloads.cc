#include "bench/workloads.h"

namespace pmindex::bench {

namespace {

struct Entry {
  const char* name;
  Workload::Kind kind;
  OpMix mix;
  bool latest;
};

// {read, update, insert, scan, rmw, remove}
const Entry kEntries[] = {
    {"load", Workload::Kind::kLoad, {0, 0, 100, 0, 0, 0}, false},
    {"a", Workload::Kind::kMix, {50, 50, 0, 0, 0, 0}, false},
    {"b", Workload::Kind::kMix, {95, 5, 0, 0, 0, 0}, false},
    {"c", Workload::Kind::kMix, {100, 0, 0, 0, 0, 0}, false},
    {"d", Workload::Kind::kMix, {95, 0, 5, 0, 0, 0}, true},
    {"e", Workload::Kind::kMix, {0, 0, 5, 95, 0, 0}, false},
    {"f", Workload::Kind::kMix, {50, 0, 0, 0, 50, 0}, false},
    // Woo et al.'s A and B: reads mixed with inserts (YCSB's mix them with updates).
    {"a-insert", Workload::Kind::kMix, {50, 0, 50, 0, 0, 0}, false},
    {"b-insert", Workload::Kind::kMix, {95, 0, 5, 0, 0, 0}, false},
    {"insert", Workload::Kind::kMix, {0, 0, 100, 0, 0, 0}, false},
    {"lookup", Workload::Kind::kMix, {100, 0, 0, 0, 0, 0}, false},
    {"update", Workload::Kind::kMix, {0, 100, 0, 0, 0, 0}, false},
    {"remove", Workload::Kind::kMix, {0, 0, 0, 0, 0, 100}, false},
    {"scan", Workload::Kind::kMix, {0, 0, 0, 100, 0, 0}, false},
    {"recover", Workload::Kind::kRecover, {}, false},
};

}  // namespace

bool FindWorkload(std::string_view name, Workload* workload) {
  for (const Entry& e : kEntries) {
    if (name == e.name) {
      workload->name = e.name;
      workload->kind = e.kind;
      workload->mix = e.mix;
      workload->latest = e.latest;
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& WorkloadNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Entry& e : kEntries) v.push_back(e.name);
    return v;
  }();
  return names;
}

bool ParseWorkloads(std::string_view list, std::vector<Workload>* workloads, std::string* error) {
  std::vector<Workload> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string_view::npos) comma = list.size();
    const std::string_view name = list.substr(pos, comma - pos);
    Workload w;
    if (!FindWorkload(name, &w)) {
      std::string all;
      for (const std::string& n : WorkloadNames()) all += (all.empty() ? "" : ", ") + n;
      *error = "unknown workload '" + std::string(name) + "' (expected " + all + ")";
      return false;
    }
    out.push_back(w);
    pos = comma + 1;
  }
  *workloads = std::move(out);
  return true;
}

}  // namespace pmindex::bench
