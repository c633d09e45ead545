// Deprecated: the old path of gradscope/io/store/saved_report.h (docs/architecture.md, "Layout").
#pragma once
#define GRADSCOPE_NEW_HEADER_PATH "gradscope/io/store/saved_report.h"
#include "gradscope/deprecated_header_note.h"
#include "gradscope/io/store/saved_report.h"
