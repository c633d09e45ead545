// Deprecated: the old path of gradscope/core/stats/tensor_view.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/stats/tensor_view.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/stats/tensor_view.h"
