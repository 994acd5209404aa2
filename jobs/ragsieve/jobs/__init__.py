"""Orchestration: the scheduled job, sampling, flagging, golden growth, demo and the CLI root."""
