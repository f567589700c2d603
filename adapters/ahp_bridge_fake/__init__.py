"""ahp-bridge fake provider adapter."""
