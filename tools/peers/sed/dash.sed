# baotonglu/dash src/allocator.h and src/ex_finger.h: the pool is created and opened where
# stock PMDK maps it (pmemobj_create/open; their build patches PMDK with *_addr variants that
# map at a fixed address, HaoPatrick/pmdk addr-patch, which only a reopened pool needs: the
# driver always creates a fresh one), and every pmemobj_persist (one flush per line and a
# drain) is PeersPersist, defined by the driver: PEERS_FLUSH_LINE per line, one PEERS_FENCE.
s/pmemobj_create_addr(/pmemobj_create(/
s/CREATE_MODE_RW, (void\*)pool_addr)/CREATE_MODE_RW)/
s/pmemobj_open_addr(pool_name, layout_name, (void\*)pool_addr)/pmemobj_open(pool_name, layout_name)/
s/pmemobj_persist(instance_->pm_pool_, /PeersPersist(/
s/pmemobj_persist(pool, /PeersPersist(/
