# Pfzuo Level-Hashing, persistent_level_hashing/{level_hashing.h,log.h,pflush.h,
# level_hashing.c}: 8-byte binary keys and values compared and hashed over their 8 bytes
# (the authors' code takes NUL-terminated strings: strlen and strcmp); the Quartz pmalloc
# include becomes prototypes the driver defines; mfence is PEERS_FENCE (sfence), clflush is
# PEERS_FLUSH_LINE (clwb). pflush.c is not compiled: the driver's pflush writes back one line
# (their pflush returns without flushing when no write latency is emulated).
s/^#define KEY_LEN 16 .*/#define KEY_LEN 8/
s/^#define VALUE_LEN 15 .*/#define VALUE_LEN 8/
s|^#include ".*quartz/src/lib/pmalloc.h".*|void *pmalloc(size_t size); void pfree(void *p, size_t size);|
s/strlen(key)/KEY_LEN/g
s/strcmp(\([^,]*\), key) == 0/memcmp(\1, key, KEY_LEN) == 0/g
s/__asm__ __volatile__ ("mfence":::"memory");/PEERS_FENCE();/
s/__asm__ __volatile__ ("clflush %0" : : "m"(\*addr));/PEERS_FLUSH_LINE(addr);/
s/^    printf("Level hashing: .*//
s/^    printf("The number of .*//
s/^    printf("The level hash table initialization succeeds!\\n");//
