// Deprecated: the old path of gradscope/torch/compress/apply_recipe.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/torch/compress/apply_recipe.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/torch/compress/apply_recipe.h"
