// The note a forwarding header gives when a program includes a gradscope header by its old path.
//
// Each layer's headers now sit in one folder per domain (gradscope/core/stats/,
// gradscope/io/store/, gradscope/torch/audit/, ...; docs/architecture.md, "Layout"). The old
// paths keep working through the next release: each is a header under include/deprecated/ that
// includes this note and then the header at its new path. A later release removes them.
//
//   #include "gradscope/core/stats.h"   // note: ... include "gradscope/core/stats/stats.h" instead
//
// The note is a #pragma message: a note under GCC; under clang a warning (-W#pragma-messages),
// which -Werror makes an error. Define GRADSCOPE_NO_DEPRECATED_HEADER_NOTE to silence it.
// No include guard: every forwarding header that includes it gets its own note.
#ifndef GRADSCOPE_NO_DEPRECATED_HEADER_NOTE
#pragma message("gradscope: deprecated header path, include \"" GRADSCOPE_NEW_HEADER_PATH "\" instead")
#endif
#undef GRADSCOPE_NEW_HEADER_PATH
