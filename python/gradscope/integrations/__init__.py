"""Integrations with the training frameworks people use: gradscope.integrations.lightning (the
`lightning` package's Trainer). Each is imported on its own and needs its package, so that
`import gradscope` never does: a missing package is an ImportError naming the extra to install
(`pip install 'gradscope[lightning]'`) when the integration is imported."""
