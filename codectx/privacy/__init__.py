"""Secret redaction, the egress choke point and the audit log.

- `redact.Redactor(settings).redact(text, origin)`: secrets replaced by `[REDACTED:<rule>:<hmac8>]`.
- `sanitize.sanitize(text)` / `sanitize.label_snippet(text, origin)`: invisible Unicode, origin labels.
- `egress.EgressGate(settings, audit)`: `prepare(endpoint, body, sources)` -> exact bytes, `record(...)`.
- `audit.AuditLog(path)`: the hash-chained JSONL log of everything sent.
"""
