// Deprecated: the old path of gradscope/core/audit/tee_sink.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/audit/tee_sink.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/audit/tee_sink.h"
