"""Telemetry sampled around the measured window: CPU per process and per machine, bytes and packets per interface."""
