# madsys-dev/ROART nvm_mgr/util.h, benchmark/config.h and ART/N.cpp (scripts/peers.sh
# build_roart).
# util.h: asm_clwb (a clwb spelled as ".byte 0x66; xsaveopt") is PEERS_FLUSH_LINE,
# asm_mfence and asm_sfence are PEERS_FENCE (flush_data fences with asm_mfence), and the
# PM_FENCE latency loop (a getenv("NVM_LATENCY") per fence) goes.
s/asm volatile(".byte 0x66; xsaveopt %0" : "+m"(\*(volatile char \*)addr));/PEERS_FLUSH_LINE(addr);/
/^        PM_FENCE();  *\\$/d
s/__asm__ __volatile__("mfence");/PEERS_FENCE();/
s/__asm__ __volatile__("sfence");/PEERS_FENCE();/
/^        if (getenv("NVM_LATENCY")) {/,/^        }  *\\$/d
# config.h: the NVM file is /dev/shm/pmindex-peers-roart-part.data, not /mnt/pmem0/jzc/part.data.
s|"/mnt/pmem0/jzc/"|"/dev/shm/pmindex-peers-roart-"|
# N.cpp: a leaf's fingerprint read its key as (signed) char, a probe's as uint8_t (Key.h):
# every key with a byte >= 0x80 got two fingerprints that differ, and a lookup skipped its
# leaf. Both now read bytes as uint8_t.
s/^    auto k = GetKey();$/    auto k = reinterpret_cast<const uint8_t *>(GetKey());/
# N.cpp: key order (scans' start and end filters in leaf arrays) compared bytes as signed
# char: 0x80..0xff sorted before 0x00..0x7f. Now as uint8_t, the order of the tree's nodes.
s/^            return a\[i\] < b\[i\];$/            return static_cast<uint8_t>(a[i]) < static_cast<uint8_t>(b[i]);/
