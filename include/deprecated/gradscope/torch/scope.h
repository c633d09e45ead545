// Deprecated: the old path of gradscope/torch/audit/scope.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/torch/audit/scope.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/torch/audit/scope.h"
