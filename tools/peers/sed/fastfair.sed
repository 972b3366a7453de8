# FAST_FAIR single/src/btree.h: clflush() writes back with PEERS_FLUSH_LINE (clwb), mfence()
# is PEERS_FENCE (sfence), the rdtsc latency loop per line goes.
/unsigned long etsc =/{N;d;}
/while (read_tsc() < etsc)/{N;d;}
s/asm volatile("clflush %0" : "+m"(\*(volatile char \*)ptr));/PEERS_FLUSH_LINE(ptr);/
s/inline void mfence() { asm volatile("mfence" ::: "memory"); }/inline void mfence() { PEERS_FENCE(); }/
