// Stands in for glog's logging.h when building Dash (baotonglu/dash), whose epoch manager
// (XiangpengHao/epoch-reclaimer) includes it. The reclaimer logs only outside the timed path
// (its garbage list's recovery) or under its TEST_BUILD; Dash's own util/utils.h redefines LOG
// afterwards. Only the macros the reclaimer uses are provided, writing to std::clog; a failed
// check aborts, as glog's does.
#ifndef PMINDEX_TOOLS_PEERS_STUBS_GLOG_LOGGING_H_
#define PMINDEX_TOOLS_PEERS_STUBS_GLOG_LOGGING_H_

#include <cstdlib>
#include <iostream>

#define LOG(severity) std::clog
#define LOG_IF(severity, condition) \
  if (!(condition)) {               \
  } else                            \
    std::clog
#define CHECK(condition) \
  if (!(condition)) std::abort()
#define CHECK_EQ(a, b) CHECK((a) == (b))

#endif  // PMINDEX_TOOLS_PEERS_STUBS_GLOG_LOGGING_H_
