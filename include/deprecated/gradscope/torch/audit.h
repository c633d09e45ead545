// Deprecated: the old path of gradscope/torch/audit/audit.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/torch/audit/audit.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/torch/audit/audit.h"
