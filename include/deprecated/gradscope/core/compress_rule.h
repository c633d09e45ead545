// Deprecated: the old path of gradscope/core/compress/rule.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/compress/rule.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/compress/rule.h"
