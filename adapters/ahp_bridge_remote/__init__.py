"""ahp-bridge remote provider adapter."""
