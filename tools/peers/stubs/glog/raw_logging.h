// Stands in for glog's raw_logging.h when building Dash (see logging.h beside this file).
#ifndef PMINDEX_TOOLS_PEERS_STUBS_GLOG_RAW_LOGGING_H_
#define PMINDEX_TOOLS_PEERS_STUBS_GLOG_RAW_LOGGING_H_

#include <cstdlib>

#define RAW_CHECK(condition, message) \
  if (!(condition)) std::abort()

#endif  // PMINDEX_TOOLS_PEERS_STUBS_GLOG_RAW_LOGGING_H_
