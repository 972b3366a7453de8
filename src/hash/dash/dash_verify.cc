// Dash: verify(), every structural invariant of the directory and the segments.
#include <algorithm>
#include <string>
#include <vector>

#include "hash/dash/dash.h"
#include "pm/alloc.h"

namespace pmindex::hash::dash {

namespace {
Status Breach(uint64_t seg, uint32_t b, uint32_t slot, const std::string& what) {
  return Status::Corruption("dash: segment @" + std::to_string(seg) + " bucket " +
                            std::to_string(b) + " slot " + std::to_string(slot) + ": " + what);
}
}  // namespace

// Does an overflow entry of home b (or of b+1, as member) or b's counter cover a stash key,
// and does b's class bit for fp (or its kOvfCounted) send lookups to the stash?
bool DashTable::overflow_covers(uint64_t seg, uint32_t b, uint8_t fp, uint32_t stash) const {
  const Bucket* home = bucket(seg, b);
  // The counter's flag included.
  return MayHaveStashKeys(home, fp) &&
         ((stash_targets(home, bucket(seg, next(b)), fp) >> stash) & 1);
}

Status DashTable::verify_segment(uint64_t seg, uint64_t* keys) const {
  const uint64_t dp = Load(hdr(seg)->depth_pattern);
  std::vector<uint64_t> seen;          // integer keys
  std::vector<std::string> seen_bytes;  // keys=bytes
  for (uint32_t i = 0; i < geo_.normal + geo_.stash; ++i) {
    const Bucket* bk = bucket(seg, i);
    const uint32_t bm = Load(bk->bitmap);
    if ((bm & kAllocMask & ~slot_mask_) != 0) return Breach(seg, i, 0, "alloc bit of unused slot");
    if (i < geo_.normal) {
      if (Load(hdr(seg)->ovf_count[i]) != 0 && (Load(bk->ovf_member) & kOvfCounted) == 0)
        return Breach(seg, i, 0, "overflow counter without its flag");
      const uint32_t valid = (bm >> kOverflowShift) & 0xF;
      for (uint32_t e = 0; e < kOverflowFps; ++e) {
        if (((valid >> e) & 1) && ((Load(bk->ovf_stash) >> (2 * e)) & 3) >= geo_.stash)
          return Breach(seg, i, e, "overflow entry names no stash bucket");
      }
    }
    for (uint32_t m = bm & kAllocMask; m != 0; m &= m - 1) {
      const uint32_t j = static_cast<uint32_t>(__builtin_ctz(m));
      const uint64_t key = Load(bk->slot[j].key);
      const KeyHash kh = slot_hash(key);
      if (bytes_) {
        if (std::string r = record_breach(key, kh, Load(bk->fp[j])); !r.empty())
          return Breach(seg, i, j, r);
      }
      if (bytes_) {
        seen_bytes.push_back(slot_key(key));
      } else {
        seen.push_back(key);
      }
      if (kh.Pattern(DepthOf(dp)) != PatternOf(dp))
        return Breach(seg, i, j, "key outside the segment's pattern");
      if (Load(bk->fp[j]) != kh.Fp()) return Breach(seg, i, j, "fingerprint differs from key's");
      const uint32_t home = kh.Home(geo_.normal);
      if (i < geo_.normal) {
        const bool member = (bm >> (kMemberShift + j)) & 1;
        if (home != (member ? prev(i) : i)) return Breach(seg, i, j, "key in a foreign bucket");
      } else if (!overflow_covers(seg, home, kh.Fp(), i - geo_.normal)) {
        return Breach(seg, i, j, "stash key without overflow entry, counter or home flag");
      }
    }
  }
  std::sort(seen.begin(), seen.end());
  std::sort(seen_bytes.begin(), seen_bytes.end());
  if (std::adjacent_find(seen.begin(), seen.end()) != seen.end() ||
      std::adjacent_find(seen_bytes.begin(), seen_bytes.end()) != seen_bytes.end())
    return Status::Corruption("dash: segment @" + std::to_string(seg) + " holds a key twice");
  *keys += seen.size() + seen_bytes.size();
  return Status::OK();
}

Status DashTable::verify() {
  if (pool_ == nullptr) return Status::InvalidArgument("index is closed");
  uint64_t keys = 0;
  return walk([&](uint64_t seg, uint64_t) { return verify_segment(seg, &keys); });
}

}  // namespace pmindex::hash::dash
