/* The persistence instructions the peers' flush and fence functions are rewritten to use
 * (scripts/peers.sh, sed scripts in tools/peers/sed/), so that every index in the comparison
 * writes back and orders exactly as pmindex's persistence modes do:
 *   adr  (default)      a flush is one clwb per cache line, a fence one sfence;
 *   eadr (-DPEERS_EADR) a flush does nothing, a fence is a compiler barrier;
 *   -DPEERS_CLFLUSHOPT  adr with clflushopt per line, for a CPU without clwb (pmindex's adr
 *                       mode falls back to clflushopt there, src/pm/persist.h);
 *   -DPEERS_COUNT       eadr's instructions, and every flushed line and fence counted in
 *                       peers_flushes and peers_fences (a driver prints them; for counts).
 * Force-included (-include) into every peer translation unit; valid C and C++. These are the
 * peers' own instructions, outside the library on purpose: pmindex's indexes persist only
 * through src/pm/persist.h (its counters and crash tracker). */
#ifndef PMINDEX_TOOLS_PEERS_PEER_PERSIST_H_
#define PMINDEX_TOOLS_PEERS_PEER_PERSIST_H_

#if defined(PEERS_COUNT)
/* Weak: one pair of counters however many translation units include this. */
__attribute__((weak)) unsigned long long peers_flushes;
__attribute__((weak)) unsigned long long peers_fences;
#define PEERS_FLUSH_LINE(addr) \
  do {                         \
    (void)(addr);              \
    peers_flushes++;           \
  } while (0)
#define PEERS_FENCE()                          \
  do {                                         \
    peers_fences++;                            \
    __asm__ __volatile__("" ::: "memory");     \
  } while (0)
#elif defined(PEERS_EADR)
#define PEERS_FLUSH_LINE(addr) ((void)(addr))
#define PEERS_FENCE() __asm__ __volatile__("" ::: "memory")
#elif defined(PEERS_CLFLUSHOPT)
#define PEERS_FLUSH_LINE(addr) \
  __asm__ __volatile__("clflushopt %0" : "+m"(*(volatile char*)(addr)))
#define PEERS_FENCE() __asm__ __volatile__("sfence" ::: "memory")
#else
#define PEERS_FLUSH_LINE(addr) __asm__ __volatile__("clwb %0" : "+m"(*(volatile char*)(addr)))
#define PEERS_FENCE() __asm__ __volatile__("sfence" ::: "memory")
#endif

#endif /* PMINDEX_TOOLS_PEERS_PEER_PERSIST_H_ */
