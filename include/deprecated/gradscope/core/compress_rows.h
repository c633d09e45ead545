// Deprecated: the old path of gradscope/core/compress/rows.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/compress/rows.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/compress/rows.h"
