# ICPP-RNTree include/util.h: flush_data writes back with PEERS_FLUSH_LINE, its fences are
# PEERS_FENCE (sfence, not mfence), and the NVM_LATENCY emulation (a getenv per fence) goes.
s/^\([[:space:]]*\)asm_clwb(ptr);/\1PEERS_FLUSH_LINE(ptr);/
/^[[:space:]]*PM_FENCE();[[:space:]]*\\$/d
s/__asm__ __volatile__ ("mfence");/PEERS_FENCE();/
s/__asm__ __volatile__ ("sfence");/PEERS_FENCE();/
