// Deprecated: the old path of gradscope/io/embedding/json.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/io/embedding/json.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/io/embedding/json.h"
