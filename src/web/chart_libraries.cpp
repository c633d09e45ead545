#include "chart_libraries.h"

// The assembler's .incbin copies the file into .rodata between two symbols: no generated
// source (a ~800 KB string literal costs the compiler seconds and memory), no extra tool.
// The symbols are hidden, so position-independent code reaches them without a GOT entry.
// clang-format off
#define GRADSCOPE_INCBIN(name, file)                   \
  __asm__(".section .rodata\n"                         \
          ".balign 16\n"                               \
          ".global gradscope_web_" #name "_begin\n"    \
          ".hidden gradscope_web_" #name "_begin\n"    \
          "gradscope_web_" #name "_begin:\n"           \
          ".incbin \"" file "\"\n"                     \
          ".global gradscope_web_" #name "_end\n"      \
          ".hidden gradscope_web_" #name "_end\n"      \
          "gradscope_web_" #name "_end:\n"             \
          ".byte 0\n"                                  \
          ".previous\n");                              \
  extern "C" __attribute__((visibility("hidden")))     \
  const char gradscope_web_##name##_begin[];           \
  extern "C" __attribute__((visibility("hidden")))     \
  const char gradscope_web_##name##_end[]
// clang-format on

GRADSCOPE_INCBIN(bundle, GRADSCOPE_CHART_BUNDLE_JS);

namespace gradscope::web {
namespace {

std::string_view between(const char* begin, const char* end) {
  return {begin, static_cast<std::size_t>(end - begin)};
}

}  // namespace

std::string_view chart_bundle_js() {
  return between(gradscope_web_bundle_begin, gradscope_web_bundle_end);
}

std::string_view versions() { return GRADSCOPE_WEB_VERSIONS; }

}  // namespace gradscope::web
