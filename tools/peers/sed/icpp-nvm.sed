# ICPP-RNTree include/nvm_mgr.h and src/nvm_mgr.cpp: the NVM file on /dev/shm, 2 GiB instead
# of 32 GiB, mapped with MAP_POPULATE (prefaulted, as pmindex's pool).
s#"/mnt/dax/nvindex/core.data"#"/dev/shm/pmindex-peers-icpp.data"#
s#8ll \* 1024 \* 1024 \* PGSIZE; //32GB#512ll * 1024 * PGSIZE;  // 2 GiB#
s#MAP_SHARED, fd, 0)#MAP_SHARED | MAP_POPULATE, fd, 0)#
