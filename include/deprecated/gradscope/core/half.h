// Deprecated: the old path of gradscope/core/stats/half.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/stats/half.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/stats/half.h"
