// Deprecated: the old path of gradscope/core/embedding/rows.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/embedding/rows.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/embedding/rows.h"
