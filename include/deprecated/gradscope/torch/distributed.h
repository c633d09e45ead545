// Deprecated: the old path of gradscope/torch/distributed/rank_merge.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/torch/distributed/rank_merge.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/torch/distributed/rank_merge.h"
