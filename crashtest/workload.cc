#include "crashtest/workload.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "pm/mix64.h"

namespace pmindex::crashtest {
namespace {

std::string PrintValue(std::string_view v) {
  if (v.size() == 8) return "v" + std::to_string(IntValue::Decode(v));
  if (v.size() > 40) {
    return "v" + std::to_string(IntValue::Decode(v)) + "+" + std::to_string(v.size() - 8) +
           " bytes";
  }
  return "\"" + std::string(v) + "\"";
}

std::string PrintMaybe(const std::string* v) { return v ? PrintValue(*v) : "absent"; }

}  // namespace

std::string PrintKey(std::string_view key, bool int_keys) {
  if (int_keys && key.size() == 8) return std::to_string(IntKey::Decode(key));
  std::string out = "\"";
  for (unsigned char c : key) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out + "\"";
}

std::string DescribeOp(const Op& op, bool int_keys) {
  std::string s = std::string(OpKindName(op.kind)) + " " + PrintKey(op.key, int_keys);
  if (op.kind == OpKind::kInsert || op.kind == OpKind::kUpdate || op.kind == OpKind::kUpsert)
    s += " -> " + PrintValue(op.value);
  if (op.kind == OpKind::kScan) s += " count " + std::to_string(op.scan_count);
  return s;
}

Status ApplyToModel(Model& model, const Op& op, bool conditional) {
  auto it = model.find(op.key);
  if (!conditional && (op.kind == OpKind::kInsert || op.kind == OpKind::kUpdate)) {
    model[op.key] = op.value;  // a blind write (IndexTraits::conditional_writes)
    return Status::OK();
  }
  switch (op.kind) {
    case OpKind::kInsert:
      if (it != model.end()) return Status::AlreadyExists();
      model.emplace(op.key, op.value);
      return Status::OK();
    case OpKind::kUpdate:
      if (it == model.end()) return Status::NotFound();
      it->second = op.value;
      return Status::OK();
    case OpKind::kUpsert:
      model[op.key] = op.value;
      return Status::OK();
    case OpKind::kRemove:
      if (it == model.end()) return Status::NotFound();
      model.erase(it);
      return Status::OK();
    case OpKind::kLookup:
    case OpKind::kScan:
      return Status::OK();
    case OpKind::kReadModifyWrite:
      break;  // not a campaign operation (OpGenerator never draws it)
  }
  return Status::InvalidArgument(std::string(OpKindName(op.kind)) + ": not modelled");
}

OpGenerator::OpGenerator(const IndexTraits& traits, uint64_t seed, uint64_t key_space,
                         uint32_t shard, uint32_t shards)
    : traits_(traits),
      rng_(seed * 0x9e3779b97f4a7c15ull + shard + 1),
      key_space_(std::max<uint64_t>(key_space, 4)),
      shard_(shard),
      shards_(std::max<uint32_t>(shards, 1)),
      seed_(seed) {}

std::string OpGenerator::make_value(uint64_t serial) {
  // Unique per (seed, shard, serial): a value the workload never wrote cannot match.
  const uint64_t v = (seed_ << 40) ^ (uint64_t{shard_} << 32) ^ serial;
  if (value_size_ != 0) {
    // Out-of-line values: a unique 8-byte head, then a pattern of v (a torn or unpersisted
    // block shows anywhere in it), half the writes; a quarter 5 bytes (inline everywhere), a
    // quarter 8 bytes (out of line where the index holds an 8-byte word).
    std::string s = std::string(IntValue(v));
    if (serial % 4 == 1) return s.substr(0, 5);
    if (serial % 4 == 2) return s;
    s.resize(value_size_);
    for (size_t i = 8; i < s.size(); ++i)
      s[i] = static_cast<char>(pm::Mix64(v + i / 8) >> (8 * (i % 8)));
    return s;
  }
  if (!traits_.byte_keys || traits_.max_value_size < 9 || (serial & 1)) {
    return std::string(IntValue(v));
  }
  std::string s = "val" + std::to_string(v);
  const size_t len = std::min<size_t>(traits_.max_value_size, 4 + rng_() % 28);
  while (s.size() < len) s += static_cast<char>('a' + s.size() % 26);
  s.resize(std::min(s.size(), len));
  return s;
}

std::string OpGenerator::make_key() {
  const uint64_t r = rng_() % key_space_;
  if (!traits_.byte_keys || (rng_() & 1)) {
    // Integer keys: a dense cluster (node splits) and a sparse spread (radix fan-out).
    const uint64_t base = (r & 1) ? r * 0x10001ull : r;
    return std::string(IntKey(base * shards_ + shard_ + 1).view());
  }
  // Byte-string keys with shared prefixes of varied length (path compression splits).
  static const char* kPrefixes[] = {"", "user", "user00", "user0012", "k", "key:", "key:abc/"};
  std::string key(1, static_cast<char>('A' + shard_ % 26));
  key += kPrefixes[r % 7];
  key += std::to_string(r / 7);
  if (r % 5 == 0) key += std::string(r % 13, 'z');
  if (key.size() > traits_.max_key_size) key.resize(traits_.max_key_size);
  return key;
}

Op OpGenerator::next() {
  Op op;
  const uint64_t dice = rng_() % 100;
  op.kind = dice < 45   ? OpKind::kInsert
            : dice < 60 ? OpKind::kUpdate
            : dice < 75 ? OpKind::kUpsert
            : dice < 90 ? OpKind::kRemove
            : dice < 95 ? OpKind::kLookup
                        : OpKind::kScan;
  if (op.kind == OpKind::kScan && !traits_.ordered) op.kind = OpKind::kLookup;
  op.key = make_key();
  ++serial_;
  if (op.kind == OpKind::kInsert || op.kind == OpKind::kUpdate || op.kind == OpKind::kUpsert)
    op.value = make_value(serial_);
  if (op.kind == OpKind::kScan) op.scan_count = 1 + rng_() % 20;
  return op;
}

Status RunOp(Index& index, Model& model, const Op& op, bool int_keys) {
  Status got;
  switch (op.kind) {
    case OpKind::kInsert:
      got = index.insert(op.key, op.value);
      break;
    case OpKind::kUpdate:
      got = index.update(op.key, op.value);
      break;
    case OpKind::kUpsert:
      got = index.upsert(op.key, op.value);
      break;
    case OpKind::kRemove:
      got = index.remove(op.key);
      break;
    case OpKind::kLookup: {
      std::string v;
      const Status looked = index.lookup(op.key, &v);
      if (!looked.ok() && !looked.IsNotFound())
        return looked.WithContext(DescribeOp(op, int_keys));
      const bool found = looked.ok();
      auto it = model.find(op.key);
      if (found != (it != model.end()) || (found && v != it->second))
        return Status::Corruption(DescribeOp(op, int_keys) + ": got " +
                                  (found ? PrintValue(v) : "absent") + ", model has " +
                                  PrintMaybe(it != model.end() ? &it->second : nullptr));
      return Status::OK();
    }
    case OpKind::kScan: {
      auto it = model.lower_bound(op.key);
      std::string error;
      size_t n = index.scan(op.key, op.scan_count, [&](std::string_view k, std::string_view v) {
        if (it == model.end() || it->first != k || it->second != v) {
          error = "at " + PrintKey(k, int_keys) + " model has " +
                  (it == model.end() ? std::string("end") : PrintKey(it->first, int_keys));
          return false;
        }
        ++it;
        return true;
      });
      if (error.empty()) {
        size_t expect = 0;
        for (auto j = model.lower_bound(op.key); j != model.end() && expect < op.scan_count; ++j)
          ++expect;
        if (n != expect)
          error = "returned " + std::to_string(n) + " pairs, model has " + std::to_string(expect);
      }
      if (!error.empty()) return Status::Corruption(DescribeOp(op, int_keys) + ": " + error);
      return Status::OK();
    }
    case OpKind::kReadModifyWrite:
      return Status::InvalidArgument(DescribeOp(op, int_keys) + ": not a campaign operation");
  }
  Status want = ApplyToModel(model, op, index.traits().conditional_writes);
  if (got.code() != want.code())
    return Status::Corruption(DescribeOp(op, int_keys) + ": index returned " + got.ToString() +
                              ", model expects " + want.ToString());
  return Status::OK();
}

Status CheckAgainstModel(Index& index, const Model& before, const std::vector<const Op*>& inflight,
                         bool int_keys, Model* matched) {
  if (Status s = index.verify(); !s.ok()) return s.WithContext("verify() after recovery");
  const IndexTraits& t = index.traits();
  // Only the interrupted ops' keys may hold a value `before` does not: their values before
  // and after those ops (an op that fails on the model changed nothing, in the index too).
  Model touched_before, touched_after;
  for (const Op* op : inflight)
    if (auto b = before.find(op->key); b != before.end()) touched_before.insert(*b);
  touched_after = touched_before;
  for (const Op* op : inflight)
    ApplyToModel(touched_after, *op, t.conditional_writes).IgnoreError();
  auto is_touched = [&](const std::string& k) {
    for (const Op* op : inflight)
      if (op->key == k) return true;
    return false;
  };
  // Every key must hold its value before the interrupted ops, or (for their keys) after.
  auto check = [&](const std::string& k, const std::string* fv) -> Status {
    auto b = before.find(k);
    const std::string* bv = b != before.end() ? &b->second : nullptr;
    const std::string* av = bv;
    if (is_touched(k)) {
      auto a = touched_after.find(k);
      av = a != touched_after.end() ? &a->second : nullptr;
    }
    auto same = [](const std::string* x, const std::string* y) {
      return (x == nullptr && y == nullptr) || (x && y && *x == *y);
    };
    if (same(fv, bv) || same(fv, av)) return Status::OK();
    std::string expect = PrintMaybe(bv);
    if (!same(av, bv)) expect += " or " + PrintMaybe(av);
    return Status::Corruption("key " + PrintKey(k, int_keys) + ": found " + PrintMaybe(fv) +
                              ", expected " + expect +
                              (bv == nullptr && av == nullptr ? " (never acknowledged)" : ""));
  };
  // Every pair the index holds (in key order if it is ordered) agrees with point lookups
  // and with the model; a key the model or an interrupted op names that the iteration did
  // not return must be absent to lookups too.
  Model found;
  std::string error;
  bool first = true;
  std::string prev;
  const Status iterated = index.for_each([&](std::string_view k, std::string_view v) {
    if (t.ordered && !first && std::string_view(prev) >= k) {
      error = "scan out of order: " + PrintKey(prev, int_keys) + " then " + PrintKey(k, int_keys);
      return false;
    }
    first = false;
    prev.assign(k);
    if (!found.emplace(std::string(k), std::string(v)).second) {
      error = "iteration returns " + PrintKey(k, int_keys) + " twice";
      return false;
    }
    return true;
  });
  if (!iterated.ok()) return iterated.WithContext("iteration after recovery");
  if (!error.empty()) return Status::Corruption(error);
  std::string got;
  for (const auto& [k, v] : found) {
    if (!index.lookup(k, &got).ok() || got != v)
      return Status::Corruption("iteration returns " + PrintKey(k, int_keys) + " = " +
                                PrintValue(v) + " but lookup says " +
                                (got.empty() ? "absent" : PrintValue(got)));
    if (Status s = check(k, &v); !s.ok()) return s;
  }
  auto absent = [&](const std::string& k) -> Status {
    if (found.count(k) != 0) return Status::OK();  // checked above
    const Status looked = index.lookup(k, &got);
    if (!looked.ok() && !looked.IsNotFound())
      return looked.WithContext("lookup of " + PrintKey(k, int_keys));
    if (looked.ok())
      return Status::Corruption("lookup of " + PrintKey(k, int_keys) +
                                " says present, iteration disagrees");
    return check(k, nullptr);
  };
  for (const auto& [k, v] : before)
    if (Status s = absent(k); !s.ok()) return s;
  for (const Op* op : inflight)
    if (Status s = absent(op->key); !s.ok()) return s;
  if (matched != nullptr) *matched = std::move(found);
  return Status::OK();
}

Status CheckContinuation(Index& index, Model model, uint64_t seed, uint64_t count) {
  const IndexTraits& t = index.traits();
  const bool int_keys = !t.byte_keys;
  OpGenerator gen(t, seed, std::max<uint64_t>(count, 16));
  for (uint64_t i = 0; i < count; ++i) {
    Op op = gen.next();
    if (Status s = RunOp(index, model, op, int_keys); !s.ok())
      return s.WithContext("continuation op " + std::to_string(i));
  }
  if (Status s = index.verify(); !s.ok()) return s.WithContext("verify() after continuation");
  Model unused;
  if (Status s = CheckAgainstModel(index, model, {}, int_keys, &unused); !s.ok())
    return s.WithContext("after continuation");
  return Status::OK();
}

}  // namespace pmindex::crashtest
