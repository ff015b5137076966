"""The plan settings most console tests use: one commit retained, below the table's configured
retention (Hudi's default 10), so the requester allows it explicitly (the library refuses it
otherwise: timeline/clean/retention.py)."""

SHORT_RETENTION = {"commits_retained": 1, "allow_short_retention": True}
SHORT_RETENTION_FORM = {"commits_retained": "1", "allow_short_retention": "on"}
