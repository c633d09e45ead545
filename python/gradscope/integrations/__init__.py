"""Integrations with the training frameworks and tools people use (docs/integrations.md):
gradscope.integrations.lightning (Lightning's Trainer), .transformers (Hugging Face's Trainer and
an attention implementation), .wandb (a Weights & Biases run). Each is imported on its own and
needs its package, so that `import gradscope` never does: a missing package is an ImportError
naming the extra to install (`pip install 'gradscope[lightning]'`) when the integration is
imported."""
