// Deprecated: the old path of gradscope/core/trees/append.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/trees/append.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/trees/append.h"
