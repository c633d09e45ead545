// Deprecated: the old path of gradscope/core/audit/architecture.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/audit/architecture.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/audit/architecture.h"
