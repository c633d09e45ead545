// Deprecated: the old path of gradscope/io/compress/json.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/io/compress/json.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/io/compress/json.h"
