// Deprecated: the old path of gradscope/core/embedding/profile.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/core/embedding/profile.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/core/embedding/profile.h"
