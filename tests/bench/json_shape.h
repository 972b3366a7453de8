// Validates a `pmindex bench --json` document against the shape issue 3 fixes (fields may be
// added, none renamed). Shared by the in-process and the command-line tests.
#ifndef PMINDEX_TESTS_BENCH_JSON_SHAPE_H_
#define PMINDEX_TESTS_BENCH_JSON_SHAPE_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pmindex::testing {

// Every breach of the shape, one line each; empty when the document conforms.
inline std::vector<std::string> JsonShapeProblems(const nlohmann::json& doc) {
  std::vector<std::string> problems;
  auto need = [&](const nlohmann::json& obj, const std::string& where, const char* field,
                  auto check, const char* type) {
    if (!obj.is_object() || !obj.contains(field)) {
      problems.push_back(where + "." + field + " missing");
    } else if (!check(obj[field])) {
      problems.push_back(where + "." + field + " is not " + type + ": " + obj[field].dump());
    }
  };
  auto str = [](const nlohmann::json& j) { return j.is_string(); };
  auto num = [](const nlohmann::json& j) { return j.is_number(); };
  auto uint = [](const nlohmann::json& j) { return j.is_number_unsigned(); };
  auto num_or_null = [](const nlohmann::json& j) { return j.is_number() || j.is_null(); };
  auto obj = [](const nlohmann::json& j) { return j.is_object(); };
  auto sub = [](const nlohmann::json& o, const char* f) {
    return o.is_object() && o.contains(f) ? o[f] : nlohmann::json();
  };

  if (!doc.is_object()) return {"document is not an object"};
  need(doc, "", "environment", obj, "an object");
  if (doc.contains("environment")) {
    const nlohmann::json env = doc["environment"];
    need(env, "environment", "cpu", str, "a string");
    need(env, "environment", "cores", uint, "an unsigned integer");
    need(env, "environment", "mode", str, "a string");
    need(env, "environment", "pool_dir", str, "a string");
    need(env, "environment", "build", str, "a string");
    need(env, "environment", "version", str, "a string");
  }
  if (!doc.contains("results") || !doc["results"].is_array()) {
    problems.push_back("results missing or not an array");
    return problems;
  }
  for (size_t i = 0; i < doc["results"].size(); i++) {
    const auto& r = doc["results"][i];
    const std::string w = "results[" + std::to_string(i) + "]";
    need(r, w, "index", str, "a string");
    need(r, w, "workload", str, "a string");
    need(r, w, "threads", uint, "an unsigned integer");
    need(r, w, "key_type", str, "a string");
    need(r, w, "distribution", str, "a string");
    need(r, w, "keys", uint, "an unsigned integer");
    need(r, w, "ops", uint, "an unsigned integer");
    need(r, w, "seconds", num, "a number");
    need(r, w, "mops", num, "a number");
    need(r, w, "latency_ns", obj, "an object");
    for (const char* f : {"p50", "p99", "p999", "max"}) {
      need(sub(r, "latency_ns"), w + ".latency_ns", f, uint, "an unsigned integer");
    }
    need(r, w, "per_op", obj, "an object");
    for (const char* f : {"persist_calls", "flushes", "fences", "media_writes", "wpq"}) {
      need(sub(r, "per_op"), w + ".per_op", f, num, "a number");
    }
    need(r, w, "write_amplification", num_or_null, "a number or null");
    need(r, w, "media_units_per_wpq", num_or_null, "a number or null");
    need(r, w, "per_insert", obj, "an object");
    need(sub(r, "per_insert"), w + ".per_insert", "inserts", uint, "an unsigned integer");
    for (const char* f : {"wpq", "media_units"}) {
      need(sub(r, "per_insert"), w + ".per_insert", f, num_or_null, "a number or null");
    }
    need(r, w, "memory", obj, "an object");
    need(sub(r, "memory"), w + ".memory", "pm_bytes", uint, "an unsigned integer");
    need(sub(r, "memory"), w + ".memory", "dram_bytes", uint, "an unsigned integer");
    need(sub(r, "memory"), w + ".memory", "pm_bytes_per_key", num, "a number");
    need(sub(r, "memory"), w + ".memory", "dram_bytes_per_key", num, "a number");
    need(r, w, "recovery_seconds", num_or_null, "a number or null");
    need(r, w, "durability", str, "a string");
  }
  return problems;
}

}  // namespace pmindex::testing

#endif  // PMINDEX_TESTS_BENCH_JSON_SHAPE_H_
