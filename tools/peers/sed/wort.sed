# WORT wort/wort.c and WOART woart/woart.c: flush_buffer writes back with PEERS_FLUSH_LINE
# (clwb, not clflush), mfence is PEERS_FENCE, the rdtsc latency loop per line goes; WOART's
# one static_cast (C++ in a C file) becomes a C cast.
s/asm volatile ("clflush %0\\n" : "+m" (\*(char \*)(buf+i)));/PEERS_FLUSH_LINE((char *)buf + i);/
/etsc = read_tsc() + (unsigned long)(LATENCY \* CPU_FREQ_MHZ \/ 1000);/d
/while (read_tsc() < etsc)/{N;d;}
s/asm volatile("mfence" ::: "memory");/PEERS_FENCE();/
s/#define mfence() asm volatile("mfence":::"memory")/#define mfence() PEERS_FENCE()/
s/static_cast<woart_leaf \*>(ret)/(art_leaf *)ret/
