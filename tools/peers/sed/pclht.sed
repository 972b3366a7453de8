# RECIPE P-CLHT/src/clht_lb_res.c: clflush and clflush_next_check write back with
# PEERS_FLUSH_LINE (clwb, built with -DCLWB), mfence (an sfence there) is PEERS_FENCE, the
# rdtsc latency loop per line goes. movnt64's non-temporal store, the commit, stays.
/unsigned long etsc = read_tsc() +/d
/while *(read_tsc() < etsc) cpu_pause();/d
s/asm volatile(".byte 0x66; xsaveopt %0" : "+m" (\*(volatile char \*)(ptr)));/PEERS_FLUSH_LINE(ptr);/
s/asm volatile("sfence":::"memory");/PEERS_FENCE();/
