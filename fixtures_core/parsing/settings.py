"""Settings a row inherits: the frontmatter's, overridden by a block's yaml or a table's cells."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from fixtures_core.errors import FixtureError
from fixtures_core.parsing.builtins import go_arch, go_os
from fixtures_core.parsing.config import (
    Where,
    read_env,
    read_metrics,
    read_repeat,
    read_skip,
    read_string,
    read_string_list,
    read_timeout,
)
from fixtures_core.parsing.sampling import read_pass_rate, read_sampling
from fixtures_core.parsing.throughput import read_serial
from fixtures_core.spec import DEFAULT_TIMEOUT_S, Budget, Daemon, Limit, MetricSpec, PropertyValue, Redaction, Sampling
from fixtures_core.suite import SuiteSpec


@dataclass(frozen=True)
class Inherited:
    """What the frontmatter (or a block's yaml on top of it) gives a row."""

    exec: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    repeat: int = 1
    metrics: tuple[MetricSpec, ...] = ()
    skip: str | None = None  # a reason to skip at once
    skip_command: str | None = None  # Gavel's skip: a shell command, exit 0 skips
    os: tuple[str, ...] = ()
    arch: tuple[str, ...] = ()
    indeterminate: str | None = None
    code_blocks: tuple[str, ...] = ("bash",)
    properties: Mapping[str, PropertyValue] = field(default_factory=dict)
    suite: SuiteSpec | None = None  # the file's A/B suite keys (frontmatter only)
    redaction: Redaction = field(default_factory=Redaction)  # frontmatter only: file-wide
    serial: bool | None = None  # None: not said (the row's samples run in order unless the run opts in)
    concurrency: int | None = None  # frontmatter only, like limits and budget
    limits: tuple[Limit, ...] = ()
    budget: Budget | None = None
    daemon: Daemon | None = None  # frontmatter only
    pass_rate: float = 1.0
    sampling: Sampling | None = None
    devlyn: tuple[str, int] | None = None  # frontmatter only: a devlyn benchmark folder and the key's line

    def platform_skip(self) -> str | None:
        """Why this machine's os or arch is excluded, or None (``!name`` excludes, as in Gavel)."""
        for what, wanted, current in (("os", self.os, go_os()), ("arch", self.arch, go_arch())):
            excluded = {w[1:].strip().lower() for w in wanted if w.startswith("!")}
            allowed = {w.strip().lower() for w in wanted if not w.startswith("!")}
            if current in excluded:
                return f"{what} {current} is excluded"
            if allowed and current not in allowed:
                return f"{what} {current} is not in {', '.join(sorted(allowed))}"
        return None


def apply_common(
    base: Inherited,
    data: Mapping[str, object],
    key_lines: Mapping[str, int],
    item_lines: Mapping[str, list[int]],
    path: str,
) -> Inherited:
    """Keys shared by frontmatter and block yaml: env, cwd, timeout, repeat, metrics, skip, os, arch,
    indeterminate, serial, pass_rate, sampling."""

    def at(key: str) -> Where:
        return Where(path, key_lines.get(key, 1))

    if "metrics" in data and "measurements" in data:
        line = max(key_lines.get("metrics", 1), key_lines.get("measurements", 1))
        raise FixtureError(path, line, "set metrics or its alias measurements, not both", "measurements")
    changes: dict[str, object] = {}
    if "env" in data:
        changes["env"] = {**base.env, **read_env(data["env"], at("env"))}
    if "cwd" in data:
        changes["cwd"] = read_string(data["cwd"], at("cwd"), "cwd")
    if "timeout" in data:
        changes["timeout_s"] = read_timeout(data["timeout"], at("timeout"))
    if "repeat" in data:
        changes["repeat"] = read_repeat(data["repeat"], at("repeat"))
    if "serial" in data:
        changes["serial"] = read_serial(data["serial"], at("serial"))
    if "pass_rate" in data:
        changes["pass_rate"] = read_pass_rate(data["pass_rate"], at("pass_rate"))
    if "sampling" in data:
        changes["sampling"] = read_sampling(data["sampling"], at("sampling"))
    if "indeterminate" in data:
        changes["indeterminate"] = read_string(data["indeterminate"], at("indeterminate"), "indeterminate")
    if data.get("skip") not in (None, ""):  # Gavel: an empty skip keeps the inherited one
        changes["skip"], changes["skip_command"] = read_skip(data["skip"])
    for key in ("os", "arch"):
        if data.get(key) not in (None, ""):
            changes[key] = read_string_list(data[key], at(key), key)
    for key in ("metrics", "measurements"):
        if key in data:
            own = read_metrics(data[key], at(key), item_lines.get(key, []), key)
            changes["metrics"] = merge_metrics(base.metrics, own)
    return replace(base, **changes)  # type: ignore[arg-type]


def merge_metrics(inherited: tuple[MetricSpec, ...], own: tuple[MetricSpec, ...]) -> tuple[MetricSpec, ...]:
    """A block's metric replaces an inherited one of the same name; others are added."""
    own_names = {m.name for m in own}
    return tuple(m for m in inherited if m.name not in own_names) + own
