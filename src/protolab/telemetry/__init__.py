"""Telemetry around the measured window, one source per kind of counter (telemetry.source): CPU per machine,
process, thread and role, softirq per core, bytes and packets per interface, offloads, the roles' CPU weight."""
