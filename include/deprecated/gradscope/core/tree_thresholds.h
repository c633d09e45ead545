// Deprecated: the old path of gradscope/core/trees/thresholds.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/trees/thresholds.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/trees/thresholds.h"
