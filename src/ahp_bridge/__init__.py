"""ahp-bridge: serve any agent runtime to Agent Host Protocol clients (AHP 1.x, 0.9 and 0.7)."""

__version__ = "0.1.0"
PROTOCOL_VERSION = "0.7.0"
