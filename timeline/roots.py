"""Lake-wide settings per root, passed to `HudiTable.open(uri, roots=...)` as delta-rs passes
`storage_options` and PyIceberg `load_catalog(name, **props)`: no setting lives in a module of
the library, so a process (a console worker, a Spark driver, a test) opens each table with
exactly the settings it was given.

`LakeRoots.s3` are S3 settings by `s3://` root (`CLEANLINE_S3_ROOTS`, `parse_s3_roots`): a table
at or below a root is opened with its endpoint, region and credentials over the environment's.
`LakeRoots.hudi` are Hudi writer options by root (`CLEANLINE_HUDI_OPTIONS`,
`parse_hudi_options`): the layer of a table's writer settings between `hoodie.properties` and the
call's own options (`timeline.locks.discovery`). In both the longest root a table lies in wins,
matched on whole segments (`s3a://` and `s3n://` URIs match `s3://` roots)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from timeline.locks.discovery import hudi_options_for, keyed_hudi_roots, parse_hudi_options

if TYPE_CHECKING:
    from timeline.storage.s3 import S3Settings

# The S3 backend (and pyarrow with it) loads only when S3 roots are given or an s3:// table opens.

__all__ = ["LakeRoots"]


@dataclass(frozen=True, slots=True)
class LakeRoots:
    """S3 settings and Hudi writer options by root, checked when made (S3ConfigError,
    HudiOptionsError naming the root). Empty by default: every table opened with the `AWS_*`
    environment and its own `hoodie.properties`."""

    s3: Mapping[str, S3Settings] = field(default_factory=dict)
    hudi: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.s3:
            from timeline.storage.s3 import keyed_s3_roots

            keyed_s3_roots(self.s3)
        keyed_hudi_roots(self.hudi)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> LakeRoots:
        """`CLEANLINE_S3_ROOTS` and `CLEANLINE_HUDI_OPTIONS` parsed (the CLI's settings)."""
        env = os.environ if environ is None else environ
        s3: dict[str, S3Settings] = {}
        if env.get("CLEANLINE_S3_ROOTS", "").strip():
            from timeline.storage.s3 import parse_s3_roots

            s3 = parse_s3_roots(env["CLEANLINE_S3_ROOTS"], env)
        return cls(s3, parse_hudi_options(env.get("CLEANLINE_HUDI_OPTIONS", "")))

    def s3_for(self, uri: str, environ: Mapping[str, str] | None = None) -> S3Settings:
        """The settings an `s3://` URI is opened with: its longest root's over the environment's."""
        from timeline.storage.s3 import s3_settings_for

        return s3_settings_for(uri, environ, roots=self.s3)

    def storage_options_for(self, uri: str) -> S3Settings | None:
        """The S3 settings a store at `uri` is opened with (`s3_for`); None when it is not on S3."""
        return self.s3_for(uri) if uri.split(":", 1)[0].lower() in ("s3", "s3a", "s3n") else None

    def hudi_for(self, uri: str) -> tuple[str | None, dict[str, str]]:
        """(root, Hudi writer options) of the longest root the table at `uri` lies in; (None, {})."""
        return hudi_options_for(uri, self.hudi)
