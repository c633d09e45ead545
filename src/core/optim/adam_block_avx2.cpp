#define ADAM_BLOCK_NAME adam_block_avx2
#include "optim/internal/adam_block.h"
#include "optim/internal/adam_block.inc"
