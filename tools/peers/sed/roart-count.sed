# madsys-dev/ROART nvm_mgr/nvm_mgr.h, for roart_count only (scripts/peers.sh build_roart): an
# NVM file of 8 GiB mapped at 0x100000000000 instead of 256 GiB at 0x50000000, which valgrind
# cannot give (its own code sits at 0x58000000), so that callgrind runs it. Enough for 2M keys.
s/static const long long filesize = 1024LL \* 1024 \* PGSIZE; \/\/ 256GB/static const long long filesize = 32LL * 1024 * PGSIZE; \/\/ 8 GiB/
s/static const size_t start_addr = 0x50000000;/static const size_t start_addr = 0x100000000000;/
