#include "bench/worker.h"

#include <cstring>
#include <functional>

namespace pmindex::bench {

bool ClaimBlock(KeySpace& space, uint64_t end, bool shared, uint64_t* next, uint64_t* limit) {
  uint64_t first;
  if (shared) {
    first = space.hi.fetch_add(kClaimBlock, std::memory_order_relaxed);
  } else {  // nothing else writes the counter: no locked instruction (a full barrier on x86)
    first = space.hi.load(std::memory_order_relaxed);
    space.hi.store(first + kClaimBlock, std::memory_order_relaxed);
  }
  const uint64_t past = first + kClaimBlock;
  if (past > end) {  // give back what lies at or above `end`
    const uint64_t over = past - std::max(first, end);
    if (shared) {
      space.hi.fetch_sub(over, std::memory_order_relaxed);
    } else {
      space.hi.store(past - over, std::memory_order_relaxed);
    }
  }
  *next = first;
  *limit = std::min(past, end);
  return first < end;
}

bool InsertWorker(const RunContext& ctx, uint64_t end, const StopCheck& stop, ThreadResult& r) {
  const double nspc = NanosPerCycle();
  char buf[KeyCodec::kBufferSize];
  ValueSource values(*ctx.config);
  uint64_t next = 0, limit = 0;  // the claimed ids not inserted yet
  for (;;) {
    if (next == limit && (stop() || !ClaimBlock(*ctx.space, end, ctx.shared, &next, &limit))) {
      break;
    }
    const uint64_t id = next++;
    const std::string_view key = ctx.codec->encode(id, buf);
    const std::string_view value = values.make(id);
    const Status s = Measured(r, nspc, [&] { return ctx.index->insert(key, value); });
    if (!s.ok()) {
      r.failed++;
      if (!s.IsAlreadyExists()) r.error(s);
    } else {
      r.logical_bytes += key.size() + value.size();
      r.inserts++;
    }
  }
  return false;
}

void MixStream::prepare(int c, int chunks) {
  const uint64_t from = ops_ * static_cast<uint64_t>(c) / static_cast<uint64_t>(chunks);
  const uint64_t to = ops_ * static_cast<uint64_t>(c + 1) / static_cast<uint64_t>(chunks);
  first_ = from;
  count_ = to - from;
  kinds_.resize(count_);
  sizes_.resize(count_);
  keys_.resize(count_ * stride_);
  const OpMix& m = w_.mix;
  const uint32_t c_read = m.read, c_update = c_read + m.update, c_insert = c_update + m.insert,
                 c_scan = c_insert + m.scan, c_rmw = c_scan + m.rmw;
  for (uint64_t j = 0; j < count_; j++) {
    const uint32_t dice = static_cast<uint32_t>(rng_.uniform(100));
    OpKind k;
    if (dice < c_read) {
      k = OpKind::kLookup;
    } else if (dice < c_update) {
      k = OpKind::kUpdate;
    } else if (dice < c_insert) {
      k = OpKind::kInsert;
      inserts_++;
    } else if (dice < c_scan) {
      k = OpKind::kScan;
    } else if (dice < c_rmw) {
      k = OpKind::kReadModifyWrite;
    } else {
      k = OpKind::kRemove;
    }
    kinds_[j] = k;
    sizes_[j] = 0;
    if (k != OpKind::kInsert && k != OpKind::kRemove) {
      sizes_[j] = static_cast<uint16_t>(
          ctx_.codec->encode(choose(), buf_).size());
      std::memcpy(&keys_[j * stride_], buf_, sizes_[j]);
    }
  }
}

bool MixStream::run(const StopCheck& stop, ThreadResult& r) {
  const double nspc = NanosPerCycle();
  Index* const index = ctx_.index;
  const uint32_t scan_length = ctx_.config->scan_length;
  for (uint64_t j = 0; j < count_; j++) {
    if ((j & 255) == 0 && stop()) return false;
    const uint64_t i = first_ + j;
    const std::string_view key(&keys_[j * stride_], sizes_[j]);
    switch (kinds_[j]) {
      case OpKind::kLookup: {
        const bool found = Measured(r, nspc, [&] { return index->lookup(key, &value_).ok(); });
        if (!found) r.failed++;
        break;
      }
      case OpKind::kUpdate: {
        const std::string_view v = values_.make(tag_ | i);
        const Status s = Measured(r, nspc, [&] { return index->update(key, v); });
        Written(s, key, v.size(), r, /*insert=*/false);
        break;
      }
      case OpKind::kInsert: {
        const uint64_t id = Take(ctx_.space->hi, ctx_.shared);
        const std::string_view k = ctx_.codec->encode(id, buf_);
        const std::string_view v = values_.make(id);
        const Status s = Measured(r, nspc, [&] { return index->insert(k, v); });
        Written(s, k, v.size(), r, /*insert=*/true);
        break;
      }
      case OpKind::kScan: {
        const size_t got = Measured(r, nspc, [&] {
          return index->scan(key, scan_length, [&](std::string_view sk, std::string_view sv) {
            scanned_ += sk.size() + sv.size();
            return true;
          });
        });
        if (got == 0) r.failed++;
        break;
      }
      case OpKind::kReadModifyWrite: {
        size_t written = 0;
        const Status s = Measured(r, nspc, [&] {
          if (!index->lookup(key, &value_).ok()) return Status::NotFound();
          const std::string_view v = values_.make(IntValue::Decode(value_) + 1);
          written = v.size();
          return index->update(key, v);
        });
        Written(s, key, written, r, /*insert=*/false);
        break;
      }
      case OpKind::kRemove: {
        const uint64_t id = Take(ctx_.space->lo, ctx_.shared);
        if (id >= hi_) {
          Give(ctx_.space->lo, ctx_.shared);
          return false;  // every key is gone
        }
        const std::string_view k = ctx_.codec->encode(id, buf_);
        const Status s = Measured(r, nspc, [&] { return index->remove(k); });
        if (!s.ok()) {
          r.failed++;
          if (!s.IsNotFound()) r.error(s);
        } else {
          r.logical_bytes += k.size();
        }
        break;
      }
      case OpKind::kUpsert:
        break;  // no mix draws it
    }
  }
  asm volatile("" : : "r"(scanned_));
  return first_ + count_ < ops_;
}

uint64_t MixStream::choose() {
  switch (kind_) {
    case Distribution::Kind::kUniform:
      return lo_ + rng_.uniform(n_);
    case Distribution::Kind::kZipfian:
      return lo_ + zipf_->next(rng_);
    case Distribution::Kind::kSequential:
      return lo_ + (cursor_++ % n_);
    case Distribution::Kind::kLatest: {
      const uint64_t now_hi = hi_ + inserts_ * static_cast<uint64_t>(threads_);
      return lo_ + latest_.next(rng_, now_hi > lo_ ? now_hi - lo_ : 1);
    }
  }
  return lo_;
}

void MixStream::Written(const Status& s, std::string_view key, size_t value_size,
                        ThreadResult& r, bool insert) {
  if (!s.ok()) {
    r.failed++;
    if (!(insert ? s.IsAlreadyExists() : s.IsNotFound())) r.error(s);
  } else {
    r.logical_bytes += key.size() + value_size;
    if (insert) r.inserts++;
  }
}

bool TraceWorker(Index* index, const Trace& trace, const std::vector<uint32_t>& mine,
                 const StopCheck& stop, ThreadResult& r) {
  const double nspc = NanosPerCycle();
  std::string value;
  uint64_t scanned = 0;
  for (size_t i = 0; i < mine.size(); i++) {
    if ((i & 255) == 0 && stop()) break;
    const TraceOp& op = trace.ops[mine[i]];
    const std::string_view key = trace.key(op);
    const Status s = Measured(r, nspc, [&] {
      switch (op.kind) {
        case OpKind::kInsert:
          return index->insert(key, IntValue(op.line));
        case OpKind::kUpdate:
          return index->update(key, IntValue(op.line));
        case OpKind::kLookup:
          return index->lookup(key, &value);
        case OpKind::kScan:
          if (index->scan(key, op.scan_count, [&](std::string_view k, std::string_view v) {
                scanned += k.size() + v.size();
                return true;
              }) == 0 &&
              op.scan_count > 0) {
            return Status::NotFound();
          }
          return Status::OK();
        case OpKind::kRemove:
          return index->remove(key);
        case OpKind::kUpsert:
        case OpKind::kReadModifyWrite:
          break;  // no trace verb (ParseTrace)
      }
      return Status::OK();
    });
    if (!s.ok()) {
      r.failed++;
      if (!s.IsNotFound() && !s.IsAlreadyExists()) r.error(s);
    } else if (op.kind == OpKind::kInsert || op.kind == OpKind::kUpdate) {
      r.logical_bytes += key.size() + 8;
      if (op.kind == OpKind::kInsert) r.inserts++;
    } else if (op.kind == OpKind::kRemove) {
      r.logical_bytes += key.size();
    }
  }
  asm volatile("" : : "r"(scanned));
  return false;
}

std::vector<std::vector<uint32_t>> PartitionTrace(const Trace& trace, int threads) {
  std::vector<std::vector<uint32_t>> parts(threads);
  for (size_t i = 0; i < trace.ops.size(); i++) {
    const size_t t = threads == 1 ? 0 : std::hash<std::string_view>()(trace.key(trace.ops[i])) %
                                            static_cast<size_t>(threads);
    parts[t].push_back(static_cast<uint32_t>(i));
  }
  return parts;
}

}  // namespace pmindex::bench
