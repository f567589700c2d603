"""ahp-bridge copilot provider adapter."""
