// Deprecated: the old path of gradscope/torch/audit/parameter_probe.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/torch/audit/parameter_probe.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/torch/audit/parameter_probe.h"
