"""Secret redaction, the egress choke point and the audit log."""
