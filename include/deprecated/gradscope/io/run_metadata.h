// Deprecated: the old path of gradscope/io/store/run_metadata.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/io/store/run_metadata.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/io/store/run_metadata.h"
