# DICL CCEH util/persist.h: clflush() writes back with PEERS_FLUSH_LINE (clwb), mfence() is
# PEERS_FENCE (sfence), the rdtsc latency loop per line goes.
/unsigned long etcs = ReadTSC()/d
/while (ReadTSC() < etcs) CPUPause();/d
s/asm volatile("clflush %0" : "+m" (\*(volatile char\*)ptr));/PEERS_FLUSH_LINE(ptr);/
s/asm volatile("mfence":::"memory");/PEERS_FENCE();/
