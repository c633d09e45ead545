// Deprecated: the old path of gradscope/core/trees/data.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/trees/data.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/trees/data.h"
