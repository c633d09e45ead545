// Deprecated: the old path of gradscope/core/findings/findings.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/findings/findings.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/findings/findings.h"
