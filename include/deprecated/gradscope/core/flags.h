// Deprecated: the old path of gradscope/core/audit/flags.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/audit/flags.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/audit/flags.h"
