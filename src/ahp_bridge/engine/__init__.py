"""The engine: every decision of the host, sans-IO (see `engine.core`).

It is fed inputs (`engine.inputs`: a frame from a peer, a batch of provider events, a job's
outcome, a timer) and returns typed effects (`engine.effects`: frames in each peer's outbox, a
close, a provider call or other job to run, a timer to set). No trio, no threads, no sockets,
no clock, no file I/O: the trio shell around it (`ahp_bridge.host`) does all the waiting.
"""
