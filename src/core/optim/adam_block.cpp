#define ADAM_BLOCK_NAME adam_block_portable
#include "optim/internal/adam_block.h"
#include "optim/internal/adam_block.inc"
