// The node-level experiments of the lab: E1 search, E3 iterate, E4 insert, E5 split, E8 erase,
// E9 balance, E10 merge (over the node organisations), and E2 traversal (DRAM vs the arena).
#include <cstdlib>
#include <cstring>

#include "bench/lab/lab_internal.h"

namespace pmindex::lab {

using primitives::Capacity;
using primitives::Layout;
using primitives::MakeLayout;
using primitives::Node;
using primitives::Org;
using primitives::Search;

namespace {

volatile uint64_t g_sink;

void Fill(Node& n, size_t from, size_t to, size_t skip = SIZE_MAX) {
  for (size_t i = from; i < to; ++i)
    if (i != skip) n.Insert(KeyAt(i), ValueOf(KeyAt(i)));
}

void Emit(Lab& lab, Row row, const char* exp, const std::string& variant, const char* pos) {
  row.exp = exp;
  row.variant = variant;
  row.position = pos;
  lab.rows->push_back(std::move(row));
}

struct SearchVariant {
  Org org;
  Search how;
  const char* name;
};
constexpr SearchVariant kSearches[] = {
    {Org::kSorted, Search::kBinary, "binary"},          {Org::kSorted, Search::kLinear, "linear"},
    {Org::kUnsorted, Search::kLinear, "linear"},        {Org::kUnsortedBitmap, Search::kLinear, "linear+bit"},
    {Org::kIndirection, Search::kDefault, "binary-ind"}, {Org::kHashing, Search::kDefault, "hash-probe"},
    {Org::kBitmap, Search::kLinear, "linear+bit"}};

}  // namespace

void RunE1(Lab& lab) {
  for (size_t bytes : kNodeSizes) {
    lab.Progress("E1 node search, %zu B nodes", bytes);
    for (const SearchVariant& v : kSearches) {
      const Layout l = MakeLayout(v.org, bytes);
      for (const char* pos : kPositions) {
        const primitives::Key key = KeyAt(PositionIndex(pos, l.capacity));
        for (bool cached : {false, true}) {
          NodeOp op;
          op.prep = [&](Node& a, Node&) { Fill(a, 0, l.capacity); };
          op.op = [&](Node& a, Node&) { g_sink = g_sink + a.Find(key, v.how); };
          op.cached = cached;
          op.mutates = false;
          Emit(lab, MeasureNodeOp(lab, l, op), "E1", v.name, pos);
        }
      }
    }
  }
}

void RunE4(Lab& lab) {
  for (size_t bytes : kNodeSizes) {
    lab.Progress("E4 node insert, %zu B nodes", bytes);
    for (Org org : primitives::kAllOrgs) {
      const Layout l = MakeLayout(org, bytes);
      for (const char* pos : kPositions) {
        const size_t p = PositionIndex(pos, l.capacity);
        NodeOp op;
        op.prep = [&](Node& a, Node&) { Fill(a, 0, l.capacity, p); };
        op.op = [&](Node& a, Node&) { a.Insert(KeyAt(p), ValueOf(KeyAt(p))); };
        Emit(lab, MeasureNodeOp(lab, l, op), "E4", "insert", pos);
      }
    }
  }
}

void RunE8(Lab& lab) {
  for (size_t bytes : kNodeSizes) {
    lab.Progress("E8 erase from node, %zu B nodes", bytes);
    for (Org org : primitives::kAllOrgs) {
      const Layout l = MakeLayout(org, bytes);
      for (const char* pos : kPositions) {
        const size_t p = PositionIndex(pos, l.capacity);  // filled in key order: slot p
        NodeOp op;
        op.prep = [&](Node& a, Node&) { Fill(a, 0, l.capacity); };
        op.op = [&](Node& a, Node&) { a.EraseAt(static_cast<int>(p)); };
        Emit(lab, MeasureNodeOp(lab, l, op), "E8", "erase", pos);
      }
    }
  }
}

void RunE3(Lab& lab) {
  for (size_t bytes : kNodeSizes) {
    lab.Progress("E3 iterate, %zu B nodes", bytes);
    for (Org org : primitives::kAllOrgs) {
      const Layout l = MakeLayout(org, bytes);
      const size_t n = Capacity(Org::kIndirection, bytes);  // same pairs for every organisation
      for (bool via_slots : {false, true}) {
        if (via_slots && org != Org::kIndirection) continue;
        for (bool cached : {false, true}) {
          NodeOp op;
          op.prep = [&](Node& a, Node&) { Fill(a, 0, n); };
          op.op = [&](Node& a, Node&) { g_sink = g_sink + a.SumKeys(via_slots); };
          op.cached = cached;
          op.mutates = false;
          const char* how = via_slots ? "slots" : (l.words != 0 ? "bitmap" : "count");
          Emit(lab, MeasureNodeOp(lab, l, op), "E3", how, "");
        }
      }
    }
  }
}

void RunE5(Lab& lab) {
  for (size_t bytes : kNodeSizes) {
    lab.Progress("E5 node split, %zu B nodes", bytes);
    for (Org org : primitives::kAllOrgs) {
      const Layout l = MakeLayout(org, bytes);
      for (auto mode : {primitives::SplitMode::kMove, primitives::SplitMode::kCopy}) {
        if (mode == primitives::SplitMode::kCopy && l.words == 0) continue;
        NodeOp op;
        op.prep = [&](Node& a, Node&) { Fill(a, 0, l.capacity); };
        op.op = [&](Node& a, Node& b) { a.Split(b, mode); };
        Emit(lab, MeasureNodeOp(lab, l, op), "E5",
             mode == primitives::SplitMode::kMove ? "move" : "copy", "");
      }
    }
  }
}

void RunE9(Lab& lab) {
  for (size_t bytes : kNodeSizes) {
    lab.Progress("E9 balance, %zu B nodes", bytes);
    for (Org org : primitives::kAllOrgs) {
      const Layout l = MakeLayout(org, bytes);
      const size_t m = l.capacity;
      NodeOp op;
      op.prep = [&](Node& a, Node& b) { Fill(a, 0, m); Fill(b, m, m + m / 2 - 1); };
      op.op = [&](Node& a, Node& b) { a.MoveTo(b, m / 4, /*largest=*/true); };
      Emit(lab, MeasureNodeOp(lab, l, op), "E9", "quarter", "");
    }
  }
}

void RunE10(Lab& lab) {
  for (size_t bytes : kNodeSizes) {
    lab.Progress("E10 merge nodes, %zu B nodes", bytes);
    for (Org org : primitives::kAllOrgs) {
      const Layout l = MakeLayout(org, bytes);
      const size_t m = l.capacity;
      NodeOp op;
      op.prep = [&](Node& a, Node& b) { Fill(a, 0, m / 2); Fill(b, m / 2, m / 2 + m / 2); };
      op.op = [&](Node& a, Node& b) { a.MergeFrom(b); };
      Emit(lab, MeasureNodeOp(lab, l, op), "E10", "append", "");
    }
  }
}

// E2: a root-to-leaf walk of `depth` 256-byte nodes, each a random one of 8 children, in
// DRAM (malloc) or in the arena; no search inside nodes (the paper's setup).
void RunE2(Lab& lab) {
  constexpr size_t kNode = 256, kFan = 8;
  const size_t nodes = lab.arena->size() / kNode;
  char* dram = static_cast<char*>(std::aligned_alloc(64, nodes * kNode));
  for (int where = 0; where < 2; ++where) {
    char* base = where == 0 ? dram : lab.arena->base();
    for (size_t i = 0; i < nodes; ++i) {
      auto* child = reinterpret_cast<uint64_t*>(base + i * kNode);
      for (size_t c = 0; c < kFan; ++c) child[c] = (lab.rng() % nodes) * kNode;
    }
    for (int depth = 1; depth <= 5; ++depth) {
      lab.Progress("E2 traverse, %s, depth %d", where == 0 ? "DRAM" : "arena", depth);
      pm::EvictLines(base, nodes * kNode);
      std::vector<uint64_t> path(lab.iters);
      for (auto& p : path) p = lab.rng();
      std::vector<double> samples;
      const double overhead = ClockOverhead();
      uint64_t sink = 0;
      for (uint64_t i = 0; i < lab.iters; ++i) {
        const double t0 = NowNs();
        uint64_t off = (path[i] % nodes) * kNode, r = path[i];
        for (int d = 0; d < depth; ++d, r >>= 3)
          off = reinterpret_cast<const uint64_t*>(base + off)[r % kFan];
        sink += *reinterpret_cast<const uint64_t*>(base + off);
        samples.push_back(NowNs() - t0 - overhead);
      }
      g_sink = sink;
      Row row;
      row.exp = "E2";
      row.org = where == 0 ? "dram" : "arena";
      row.variant = "traverse";
      row.node_bytes = kNode;
      row.param = "depth=" + std::to_string(depth);
      row.ns = Median(samples);
      row.ops = lab.iters;
      lab.rows->push_back(row);
    }
  }
  std::free(dram);
}

}  // namespace pmindex::lab
