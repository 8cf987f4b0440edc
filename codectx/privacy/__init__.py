"""Secret redaction, the egress choke point and the audit log.

- `redact.Redactor(settings).redact(text, origin)`: secrets replaced by `[REDACTED:<rule>:<hmac8>]`.
- `sanitize.sanitize(text)` / `sanitize.label_snippet(text, origin)`: invisible Unicode, origin labels.
- `egress.EgressGate(settings, audit)`: `prepare(endpoint, body, sources)` -> exact bytes;
  `intend(prepared)` (the audit entry, durable before sending), `record(prepared, sent, status, intent)`.
- `audit.AuditLog(path)`: the write-ahead, hash-chained JSONL log of everything sent; `audithead` anchors
  it (MACed head record), `auditverify` checks it and names what was changed.
"""
