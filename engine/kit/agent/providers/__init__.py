"""Model providers. `kit.agent.providers.base` holds the shared types."""
