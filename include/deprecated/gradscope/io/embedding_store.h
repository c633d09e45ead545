// Deprecated: the old path of gradscope/io/embedding/store.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/io/embedding/store.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/io/embedding/store.h"
