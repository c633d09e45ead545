// Deprecated: the old path of gradscope/io/trees/store.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/io/trees/store.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/io/trees/store.h"
