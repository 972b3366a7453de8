#include "pmindex/options.h"

namespace pmindex {

const char* PersistModeName(PersistMode mode) {
  switch (mode) {
    case PersistMode::kAdr: return "adr";
    case PersistMode::kEadr: return "eadr";
    case PersistMode::kAsync: return "async";
    case PersistMode::kAdaptive: return "adaptive";
    case PersistMode::kVolatile: return "volatile";
  }
  return "?";
}

bool ParsePersistMode(std::string_view name, PersistMode* mode) {
  for (PersistMode m : {PersistMode::kAdr, PersistMode::kEadr, PersistMode::kAsync,
                        PersistMode::kAdaptive, PersistMode::kVolatile}) {
    if (name == PersistModeName(m)) {
      *mode = m;
      return true;
    }
  }
  return false;
}

const char* MediaModelName(MediaModel model) {
  return model == MediaModel::kShared ? "shared" : "per-thread";
}

bool ParseMediaModel(std::string_view name, MediaModel* model) {
  for (MediaModel m : {MediaModel::kPerThread, MediaModel::kShared}) {
    if (name == MediaModelName(m)) {
      *model = m;
      return true;
    }
  }
  return false;
}

}  // namespace pmindex
