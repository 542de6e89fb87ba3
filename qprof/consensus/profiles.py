"""Chain profiles: a chain's Verify-Unit constants, block limits and policy, in TOML.

Found by name in ``$QPROF_PROFILES``, then among the shipped ones, or given as a path.
Every error names the file, the key and what was expected, so a typo never turns into a
silently wrong verdict. The policy keys (``ratio_binds``, ``[block_time]``,
``[auth_bytes_per_spend]``): docs/ESTIMATOR.md.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from qprof.tomlfile import TomlFileError, read_toml
from qprof.verify.suites import SUITES

# What a profile without a `verifier` key is held to: the node's verifier (qanum-core).
DEFAULT_VERIFIER = "liboqs"


RatioBinds = Literal["reference", "all"]
RATIO_BINDS: tuple[RatioBinds, ...] = ("reference", "all")
# What a profile without a `ratio_binds` key says: every core, the strict reading.
DEFAULT_RATIO_BINDS: RatioBinds = "all"


# Which signature's figure the constants are held to: the median one (the seeds' method,
# qanum) or the worst one an adversary can bring (``qprof adversary``).
HeldTo = Literal["median", "worst_signature"]
HELD_TO: tuple[HeldTo, ...] = ("median", "worst_signature")
DEFAULT_HELD_TO: HeldTo = "median"


class ProfileError(ValueError):
    """A profile that cannot be used; the message names file, key and expectation."""


@dataclass(frozen=True)
class ReferenceCore:
    """A core the constants were set from, with its measured verify medians."""

    name: str
    verify_median_ns: dict[str, float]
    part_name: str | None = None
    uarch: str | None = None
    implementer: str | None = None
    part: str | None = None
    max_khz: int | None = None
    backend: str | None = None
    source: str | None = None


@dataclass(frozen=True)
class BlockTimeBound:
    """The time bound every node is held to (``[block_time]``): this core's worst-case
    block takes at most ``max_vs_reference`` x the same block on the slowest reference
    core, and, when stated, at most ``max_interval_fraction`` of the target interval."""

    max_vs_reference: float = 1.0
    max_interval_fraction: float | None = None


@dataclass(frozen=True)
class Profile:
    name: str
    path: Path
    unit_suite: str
    verify_units: dict[str, int]  # suite -> constant (the unit suite included)
    max_block_verify_units: int
    max_block_auth_bytes: int | None = None
    target_block_interval_s: float | None = None
    suites_in_use: tuple[str, ...] = ()
    description: str = ""
    reference_cores: tuple[ReferenceCore, ...] = field(default_factory=tuple)
    # The verifier backend the constants are held to (a node's own verifier): only its
    # figures, alone or as the first of a dual pair, get a coverage verdict.
    verifier: str = DEFAULT_VERIFIER
    # Where the ratio coverage binds: on the reference cores (matched by design or part),
    # or on every core.
    ratio_binds: RatioBinds = DEFAULT_RATIO_BINDS
    block_time: BlockTimeBound | None = None  # None: the profile states no time bound
    # suite -> bytes one spend adds against max_block_auth_bytes (key + signature + the
    # chain's overhead), and the bytes every block carries whatever it holds.
    auth_bytes_per_spend: dict[str, int] = field(default_factory=dict)
    auth_bytes_per_block: int = 0
    # The figure the constants are held to; the other is shown beside it.
    constants_held_to: HeldTo = DEFAULT_HELD_TO

    @property
    def unit_vu(self) -> int:
        return self.verify_units[self.unit_suite]

    @property
    def suites(self) -> list[str]:
        """Unit suite first, then the others in file order."""
        return [self.unit_suite] + [s for s in self.verify_units if s != self.unit_suite]

    def reference_core(self) -> ReferenceCore | None:
        """The core the constants follow: the first listed (the slowest, by convention)."""
        return self.reference_cores[0] if self.reference_cores else None


def shipped_profile_dir() -> Path:
    """The profiles installed with the package (``qprof.profiles``, mapped onto the
    repository's ``profiles/``). qprof is always installed as files (numba caches its
    kernels by source path), so the resource is a real directory."""
    try:
        return Path(str(resources.files("qprof.profiles")))
    except ModuleNotFoundError:  # run from a checkout that was never installed
        return Path(__file__).resolve().parents[2] / "profiles"


def profile_dirs() -> list[Path]:
    """Where names are looked up, in order: $QPROF_PROFILES, then the shipped profiles."""
    env = os.environ.get("QPROF_PROFILES", "")
    return [*(Path(p) for p in env.split(os.pathsep) if p), shipped_profile_dir()]


def available_profiles() -> list[str]:
    names: set[str] = set()
    for d in profile_dirs():
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.toml"))
    return sorted(names)


def _there(path: Path, file: bool = False) -> bool:
    """Does ``path`` exist (``file``: as a regular file)? A name no file can have (too
    long, a NUL byte: a run's JSONL names its profile) is simply not there."""
    try:
        return path.is_file() if file else path.exists()
    except (OSError, ValueError):
        return False


def find_profile(name_or_path: str | Path) -> Path:
    text = str(name_or_path)
    candidate = Path(text).expanduser()
    if candidate.suffix == ".toml" or os.sep in text or _there(candidate):
        if not _there(candidate):
            raise ProfileError(f"{candidate}: profile file not found")
        return candidate  # a directory or FIFO is named as such by load_profile
    return _find_named(text)


# A profile's name: what a file in a profile directory is called, without ".toml".
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def recorded_profile_name(recorded: str) -> str | None:
    """The profile NAME a recorded run's ``meta.profile`` stands for (a run records its
    profile's path, ``/usr/lib/.../qanum.toml``: the name is its stem); None when it is
    no name. A recorded path is never opened: anyone can write a run file."""
    name = Path(recorded).stem if recorded.endswith(".toml") or "/" in recorded \
        else recorded
    return name if _NAME.fullmatch(name) else None


def load_named_profile(name: str) -> Profile:
    """The profile called ``name`` in the profile directories (:func:`profile_dirs`),
    never a path (see :func:`recorded_profile_name`)."""
    if not _NAME.fullmatch(name):
        raise ProfileError(f"{name[:100]!r} is not a profile name")
    path = _find_named(name)
    try:
        data = read_toml(path)
    except TomlFileError as exc:
        raise ProfileError(str(exc)) from None
    return profile_from_dict(data, path)


def run_profile(recorded: str | None, default: str) -> Profile:
    """The profile a recorded run is judged against: the name its ``meta.profile``
    records (``default`` when none), looked up in the profile directories."""
    if recorded is None:
        return load_named_profile(default)
    name = recorded_profile_name(recorded)
    if name is None:
        raise ProfileError(f"the run's profile {recorded[:100]!r} is not a profile name")
    return load_named_profile(name)


def run_profile_note(recorded: str | None, profile: Profile) -> str | None:
    """What to tell the user when a run named another profile file than the one that
    judges it (None: it named this one, or only its name)."""
    if recorded is None or recorded in (str(profile.path), profile.name):
        return None
    shown = recorded if len(recorded) <= 200 else recorded[:200] + "..."
    return (f"the run names the profile {shown!r}; judged against {profile.name!r} "
            f"found here, {profile.path} (give --profile to choose another)")


def _find_named(text: str) -> Path:
    for d in profile_dirs():
        path = d / f"{text}.toml"
        if _there(path, file=True):
            return path
    known = ", ".join(available_profiles()) or "none found"
    raise ProfileError(
        f"profile {text!r} not found in {', '.join(str(d) for d in profile_dirs())} "
        f"(known profiles: {known})"
    )


def _int(path: Path, key: str, value: Any, minimum: int = 1) -> int:
    # bool is an int in Python; a profile saying `true` for a constant is a mistake.
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProfileError(f"{path}: {key}: expected an integer, got {value!r}")
    if value < minimum:
        raise ProfileError(f"{path}: {key}: expected an integer >= {minimum}, got {value}")
    return value


def _number(path: Path, key: str, value: Any) -> float:
    if (isinstance(value, bool) or not isinstance(value, int | float)
            or not math.isfinite(value) or value <= 0):
        raise ProfileError(f"{path}: {key}: expected a positive finite number, "
                           f"got {value!r}")
    return float(value)


def _suite(path: Path, key: str, value: Any, suites: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in suites:
        raise ProfileError(
            f"{path}: {key}: unknown suite {value!r} (expected one of: {', '.join(suites)})"
        )
    return value


def _opt_str(path: Path, key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ProfileError(f"{path}: {key}: expected a string, got {value!r}")
    return value


def load_profile(name_or_path: str | Path) -> Profile:
    path = find_profile(name_or_path)
    try:
        data = read_toml(path)
    except TomlFileError as exc:
        raise ProfileError(str(exc)) from None
    return profile_from_dict(data, path)


def _reference_core(path: Path, key: str, ref: object,
                    suites: tuple[str, ...]) -> ReferenceCore:
    if not isinstance(ref, dict):
        raise ProfileError(f"{path}: {key}: expected a table")
    ref_name = ref.get("name")
    if not isinstance(ref_name, str) or not ref_name:
        raise ProfileError(f"{path}: {key}.name: expected a non-empty string")
    medians_raw = ref.get("verify_median_ns", {})
    if not isinstance(medians_raw, dict):
        raise ProfileError(f"{path}: {key}.verify_median_ns: expected a table")
    medians = {
        _suite(path, f"{key}.verify_median_ns.{s!r}", s, suites): _number(
            path, f"{key}.verify_median_ns.{s!r}", v
        )
        for s, v in medians_raw.items()
    }
    max_khz = ref.get("max_khz")
    return ReferenceCore(
        name=ref_name,
        verify_median_ns=medians,
        part_name=_opt_str(path, f"{key}.part_name", ref.get("part_name")),
        uarch=_opt_str(path, f"{key}.uarch", ref.get("uarch")),
        implementer=_opt_str(path, f"{key}.implementer", ref.get("implementer")),
        part=_opt_str(path, f"{key}.part", ref.get("part")),
        max_khz=None if max_khz is None else _int(path, f"{key}.max_khz", max_khz),
        backend=_opt_str(path, f"{key}.backend", ref.get("backend")),
        source=_opt_str(path, f"{key}.source", ref.get("source")),
    )


def profile_from_dict(data: dict[str, Any], path: Path) -> Profile:
    suites = tuple(SUITES)
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name:
        raise ProfileError(f"{path}: name: expected a non-empty string, got {name!r}")

    vu_table = data.get("verify_units")
    if not isinstance(vu_table, dict) or not vu_table:
        raise ProfileError(f"{path}: verify_units: expected a table of suite = integer")
    verify_units = {
        _suite(path, f"verify_units.{suite!r}", suite, suites): _int(
            path, f"verify_units.{suite!r}", value
        )
        for suite, value in vu_table.items()
    }

    if "unit_suite" not in data:
        raise ProfileError(f"{path}: unit_suite: missing (expected a suite name, e.g. ML-DSA-44)")
    unit = _suite(path, "unit_suite", data["unit_suite"], suites)
    if unit not in verify_units:
        raise ProfileError(
            f"{path}: verify_units: missing the unit suite {unit!r} (expected its constant)"
        )

    if "max_block_verify_units" not in data:
        raise ProfileError(f"{path}: max_block_verify_units: missing (expected an integer)")
    max_vu = _int(path, "max_block_verify_units", data["max_block_verify_units"])
    auth = data.get("max_block_auth_bytes")
    auth_bytes = None if auth is None else _int(path, "max_block_auth_bytes", auth)
    interval = data.get("target_block_interval_s")
    interval_s = None if interval is None else _number(path, "target_block_interval_s", interval)

    in_use_raw = data.get("suites_in_use", [])
    if not isinstance(in_use_raw, list):
        raise ProfileError(f"{path}: suites_in_use: expected a list of suite names")
    in_use = tuple(
        _suite(path, f"suites_in_use[{i}]", s, suites) for i, s in enumerate(in_use_raw)
    )
    for s in in_use:
        if s not in verify_units:
            raise ProfileError(f"{path}: suites_in_use: {s!r} has no entry in verify_units")

    refs_raw = data.get("reference_cores", [])
    if not isinstance(refs_raw, list):
        raise ProfileError(f"{path}: reference_cores: expected an array of tables")
    refs = [_reference_core(path, f"reference_cores[{i}]", ref, suites)
            for i, ref in enumerate(refs_raw)]

    verifier = data.get("verifier", DEFAULT_VERIFIER)
    # "+" joins the two verifiers of a dual pair (backend "liboqs+numba"): not one verifier.
    if not isinstance(verifier, str) or not verifier or "+" in verifier:
        raise ProfileError(
            f"{path}: verifier: expected the backend name of the node's verifier "
            f"(e.g. {DEFAULT_VERIFIER!r}), got {verifier!r}"
        )

    description = data.get("description", "")
    if not isinstance(description, str):
        raise ProfileError(f"{path}: description: expected a string")
    ratio_binds = _ratio_binds(path, data.get("ratio_binds", DEFAULT_RATIO_BINDS), refs)
    per_spend, per_block = _auth_bytes(path, data, verify_units)
    held_to = data.get("constants_held_to", DEFAULT_HELD_TO)
    if held_to not in HELD_TO:
        raise ProfileError(f"{path}: constants_held_to: expected one of "
                           f"{', '.join(repr(h) for h in HELD_TO)}, got {held_to!r}")
    return Profile(
        name=name,
        path=path,
        unit_suite=unit,
        verify_units=verify_units,
        max_block_verify_units=max_vu,
        max_block_auth_bytes=auth_bytes,
        target_block_interval_s=interval_s,
        suites_in_use=in_use,
        description=description,
        reference_cores=tuple(refs),
        verifier=verifier,
        ratio_binds=ratio_binds,
        block_time=_block_time(path, data.get("block_time"), refs, interval_s),
        auth_bytes_per_spend=per_spend,
        auth_bytes_per_block=per_block,
        constants_held_to=held_to,
    )


def _ratio_binds(path: Path, value: Any, refs: list[ReferenceCore]) -> RatioBinds:
    for choice in RATIO_BINDS:
        if value == choice:
            break
    else:
        raise ProfileError(f"{path}: ratio_binds: expected one of "
                           f"{', '.join(repr(c) for c in RATIO_BINDS)}, got {value!r}")
    if choice == "reference":
        if not refs:
            raise ProfileError(f"{path}: ratio_binds: 'reference' needs [[reference_cores]] "
                               "(the cores the ratio binds on)")
        for i, ref in enumerate(refs):
            if not (ref.uarch or ref.part):
                raise ProfileError(
                    f"{path}: reference_cores[{i}]: ratio_binds = 'reference' matches cores "
                    "by design or part: expected uarch, or implementer and part")
    return choice


def _block_time(path: Path, value: Any, refs: list[ReferenceCore],
                interval_s: float | None) -> BlockTimeBound | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ProfileError(f"{path}: block_time: expected a table")
    unknown = sorted(set(value) - {"max_vs_reference", "max_interval_fraction"})
    if unknown:
        raise ProfileError(f"{path}: block_time: unknown key {unknown[0]!r} (expected "
                           "max_vs_reference, max_interval_fraction)")
    factor = _number(path, "block_time.max_vs_reference", value.get("max_vs_reference", 1.0))
    if "max_vs_reference" in value and not refs:
        raise ProfileError(f"{path}: block_time.max_vs_reference: needs [[reference_cores]] "
                           "with verify_median_ns (the block on the reference core)")
    fraction = value.get("max_interval_fraction")
    if fraction is not None:
        fraction = _number(path, "block_time.max_interval_fraction", fraction)
        if fraction > 1:
            raise ProfileError(f"{path}: block_time.max_interval_fraction: expected a "
                               f"fraction of the interval (0 < f <= 1), got {fraction}")
        if interval_s is None:
            raise ProfileError(f"{path}: block_time.max_interval_fraction: needs "
                               "target_block_interval_s")
    return BlockTimeBound(max_vs_reference=factor, max_interval_fraction=fraction)


def _auth_bytes(path: Path, data: dict[str, Any], verify_units: dict[str, int]
                ) -> tuple[dict[str, int], int]:
    table = data.get("auth_bytes_per_spend", {})
    if not isinstance(table, dict):
        raise ProfileError(f"{path}: auth_bytes_per_spend: expected a table of "
                           "suite = bytes")
    suites = tuple(verify_units)
    per_spend = {
        _suite(path, f"auth_bytes_per_spend.{s!r}", s, suites): _int(
            path, f"auth_bytes_per_spend.{s!r}", v)
        for s, v in table.items()
    }
    per_block = _int(path, "auth_bytes_per_block", data.get("auth_bytes_per_block", 0), 0)
    if per_spend and data.get("max_block_auth_bytes") is None:
        raise ProfileError(f"{path}: auth_bytes_per_spend: needs max_block_auth_bytes (the "
                           "limit the bytes count against)")
    return per_spend, per_block
