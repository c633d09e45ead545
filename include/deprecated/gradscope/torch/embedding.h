// Deprecated: the old path of gradscope/torch/embedding/tracker.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/torch/embedding/tracker.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/torch/embedding/tracker.h"
