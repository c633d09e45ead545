// Deprecated: the old path of gradscope/core/stats/element_histogram.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/stats/element_histogram.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/stats/element_histogram.h"
