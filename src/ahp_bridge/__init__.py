"""ahp-bridge: serve any agent runtime to Agent Host Protocol (AHP 0.7.0) clients."""

__version__ = "0.1.0"
PROTOCOL_VERSION = "0.7.0"
