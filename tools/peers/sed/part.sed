# RECIPE P-ART/N.cpp: N::clflush writes back with PEERS_FLUSH_LINE (clwb, built with -DCLWB),
# N::mfence is PEERS_FENCE, the rdtsc latency loop per line goes.
/unsigned long etsc = read_tsc() +/{N;d;}
/while (read_tsc() < etsc) cpu_pause();/d
s/asm volatile(".byte 0x66; xsaveopt %0" : "+m" (\*(volatile char \*)(ptr)));/PEERS_FLUSH_LINE(ptr);/
s/asm volatile("sfence":::"memory");/PEERS_FENCE();/
