"""Identification tables: ARM implementers and parts, the Arm design a vendor core
wraps, x86 family/model -> microarchitecture, and chipsets whose kernels hide cores.

Sources: util-linux ``sys-utils/lscpu-arm.c`` (part names), the Linux kernel's
``arch/arm64/include/asm/cputype.h``, pytorch/cpuinfo ``src/arm/uarch.c`` and
``src/arm/linux/midr.c`` (vendor cores built on Arm designs, chipsets whose
/proc/cpuinfo omits cores). Unknown ids are reported as unknown, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# --- ARM ------------------------------------------------------------------------------

ARM_IMPLEMENTERS: dict[int, str] = {
    0x41: "Arm",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x44: "DEC",
    0x46: "Fujitsu",
    0x48: "HiSilicon",
    0x49: "Infineon",
    0x4D: "Motorola/Freescale",
    0x4E: "NVIDIA",
    0x50: "APM",
    0x51: "Qualcomm",
    0x53: "Samsung",
    0x56: "Marvell",
    0x61: "Apple",
    0x66: "Faraday",
    0x68: "HXT",
    0x69: "Intel",
    0x6D: "Microsoft",
    0x70: "Phytium",
    0xC0: "Ampere",
}

# implementer -> part -> (part name, core design). The design is the Arm core a vendor
# part wraps where that holds (Qualcomm Kryo 2xx-4xx, HiSilicon 0xd40), else the
# vendor's own design.
_ARM_PARTS: dict[int, dict[int, str]] = {
    0x41: {
        0x810: "ARM810", 0x920: "ARM920", 0x922: "ARM922", 0x926: "ARM926",
        0x940: "ARM940", 0x946: "ARM946", 0x966: "ARM966", 0xA20: "ARM1020",
        0xA22: "ARM1022", 0xA26: "ARM1026", 0xB02: "ARM11 MPCore", 0xB36: "ARM1136",
        0xB56: "ARM1156", 0xB76: "ARM1176",
        0xC05: "Cortex-A5", 0xC07: "Cortex-A7", 0xC08: "Cortex-A8", 0xC09: "Cortex-A9",
        0xC0D: "Cortex-A17", 0xC0E: "Cortex-A17", 0xC0F: "Cortex-A15",
        0xC14: "Cortex-R4", 0xC15: "Cortex-R5", 0xC17: "Cortex-R7", 0xC18: "Cortex-R8",
        0xC20: "Cortex-M0", 0xC21: "Cortex-M1", 0xC23: "Cortex-M3", 0xC24: "Cortex-M4",
        0xC27: "Cortex-M7", 0xC60: "Cortex-M0+",
        0xD01: "Cortex-A32", 0xD02: "Cortex-A34", 0xD03: "Cortex-A53", 0xD04: "Cortex-A35",
        0xD05: "Cortex-A55", 0xD06: "Cortex-A65", 0xD07: "Cortex-A57", 0xD08: "Cortex-A72",
        0xD09: "Cortex-A73", 0xD0A: "Cortex-A75", 0xD0B: "Cortex-A76",
        0xD0C: "Neoverse-N1", 0xD0D: "Cortex-A77", 0xD0E: "Cortex-A76AE",
        0xD13: "Cortex-R52", 0xD14: "Cortex-R82AE", 0xD15: "Cortex-R82", 0xD16: "Cortex-R52+",
        0xD20: "Cortex-M23", 0xD21: "Cortex-M33", 0xD22: "Cortex-M55", 0xD23: "Cortex-M85",
        0xD24: "Cortex-M52",
        0xD40: "Neoverse-V1", 0xD41: "Cortex-A78", 0xD42: "Cortex-A78AE",
        0xD43: "Cortex-A65AE", 0xD44: "Cortex-X1", 0xD46: "Cortex-A510",
        0xD47: "Cortex-A710", 0xD48: "Cortex-X2", 0xD49: "Neoverse-N2",
        0xD4A: "Neoverse-E1", 0xD4B: "Cortex-A78C", 0xD4C: "Cortex-X1C",
        0xD4D: "Cortex-A715", 0xD4E: "Cortex-X3", 0xD4F: "Neoverse-V2",
        0xD80: "Cortex-A520", 0xD81: "Cortex-A720", 0xD82: "Cortex-X4",
        0xD83: "Neoverse-V3AE", 0xD84: "Neoverse-V3", 0xD85: "Cortex-X925",
        0xD87: "Cortex-A725", 0xD88: "Cortex-A520AE", 0xD89: "Cortex-A720AE",
        0xD8A: "C1-Nano", 0xD8B: "C1-Pro", 0xD8C: "C1-Ultra", 0xD8E: "Neoverse-N3",
        0xD8F: "Cortex-A320", 0xD90: "C1-Premium",
    },
    0x42: {0x00F: "Brahma-B15", 0x100: "Brahma-B53", 0x516: "ThunderX2"},
    0x43: {
        0x0A0: "ThunderX", 0x0A1: "ThunderX-88XX", 0x0A2: "ThunderX-81XX",
        0x0A3: "ThunderX-83XX", 0x0AF: "ThunderX2-99xx", 0x0B0: "OcteonTX2",
        0x0B1: "OcteonTX2-98XX", 0x0B2: "OcteonTX2-96XX", 0x0B3: "OcteonTX2-95XX",
        0x0B4: "OcteonTX2-95XXN", 0x0B5: "OcteonTX2-95XXMM", 0x0B6: "OcteonTX2-95XXO",
        0x0B8: "ThunderX3-T110",
    },
    0x44: {0xA10: "SA110", 0xA11: "SA1100"},
    0x46: {0x001: "A64FX", 0x003: "MONAKA"},
    0x48: {0xD01: "Kunpeng-920", 0xD02: "Kunpeng-930", 0xD40: "Cortex-A76",
           0xD41: "Cortex-A77"},
    0x4E: {0x000: "Denver", 0x003: "Denver 2", 0x004: "Carmel", 0x010: "Olympus"},
    0x50: {0x000: "X-Gene"},
    0x51: {
        0x00F: "Scorpion", 0x02D: "Scorpion", 0x04D: "Krait", 0x06F: "Krait",
        0x201: "Kryo Silver", 0x205: "Kryo Gold", 0x211: "Kryo Silver",
        0x800: "Kryo 2XX Gold", 0x801: "Kryo 2XX Silver", 0x802: "Kryo 3XX Gold",
        0x803: "Kryo 3XX Silver", 0x804: "Kryo 4XX Gold", 0x805: "Kryo 4XX Silver",
        0xC00: "Falkor", 0xC01: "Saphira", 0x001: "Oryon",
    },
    0x53: {0x001: "Exynos M1", 0x002: "Exynos M3", 0x003: "Exynos M4", 0x004: "Exynos M5"},
    0x56: {0x131: "Feroceon-88FR131", 0x581: "PJ4/PJ4b", 0x584: "PJ4B-MP"},
    0x61: {
        0x000: "Swift", 0x001: "Cyclone", 0x002: "Typhoon", 0x003: "Typhoon/Capri",
        0x004: "Twister", 0x005: "Twister/Elba/Malta", 0x006: "Hurricane",
        0x007: "Hurricane/Myst", 0x008: "Monsoon", 0x009: "Mistral", 0x00B: "Vortex",
        0x00C: "Tempest", 0x00F: "Tempest-M9", 0x010: "Vortex/Aruba",
        0x011: "Tempest/Aruba", 0x012: "Lightning", 0x013: "Thunder",
        0x026: "Thunder-M10", 0x036: "Sawtooth-A16", 0x037: "Everest-A16",
        0x020: "Icestorm-A14", 0x021: "Firestorm-A14", 0x022: "Icestorm-M1",
        0x023: "Firestorm-M1", 0x024: "Icestorm-M1-Pro", 0x025: "Firestorm-M1-Pro",
        0x028: "Icestorm-M1-Max", 0x029: "Firestorm-M1-Max", 0x030: "Blizzard-A15",
        0x031: "Avalanche-A15", 0x032: "Blizzard-M2", 0x033: "Avalanche-M2",
        0x034: "Blizzard-M2-Pro", 0x035: "Avalanche-M2-Pro", 0x038: "Blizzard-M2-Max",
        0x039: "Avalanche-M2-Max",
    },
    0x66: {0x526: "FA526", 0x626: "FA626"},
    0x68: {0x000: "Phecda"},
    0x69: {
        0x200: "i80200", 0x210: "PXA250A", 0x212: "PXA210A", 0x242: "i80321-400",
        0x243: "i80321-600", 0x290: "PXA250B/PXA26x", 0x292: "PXA210B",
        0x2C2: "i80321-400-B0", 0x2C3: "i80321-600-B0", 0x2D0: "PXA250C/PXA255/PXA26x",
        0x2D2: "PXA210C", 0x411: "PXA27x", 0x41C: "IPX425-533", 0x41D: "IPX425-400",
        0x41F: "IPX425-266", 0x682: "PXA32x", 0x683: "PXA930/PXA935", 0x688: "PXA30x",
        0x689: "PXA31x", 0xB11: "SA1110", 0xC12: "IPX1200",
    },
    0x6D: {0xD49: "Azure Cobalt 100"},
    0x70: {0x303: "FTC310", 0x660: "FTC660", 0x661: "FTC661", 0x662: "FTC662",
           0x663: "FTC663", 0x664: "FTC664", 0x862: "FTC862"},
    0xC0: {0xAC3: "Ampere-1", 0xAC4: "Ampere-1a"},
}

# Vendor parts whose core design is an Arm one (or a named vendor design).
_ARM_DESIGN: dict[tuple[int, int], str] = {
    (0x51, 0x00F): "Scorpion", (0x51, 0x02D): "Scorpion",
    (0x51, 0x04D): "Krait", (0x51, 0x06F): "Krait",
    (0x51, 0x201): "Kryo", (0x51, 0x205): "Kryo", (0x51, 0x211): "Kryo",
    (0x51, 0x800): "Cortex-A73", (0x51, 0x801): "Cortex-A53",
    (0x51, 0x802): "Cortex-A75", (0x51, 0x803): "Cortex-A55",
    (0x51, 0x804): "Cortex-A76", (0x51, 0x805): "Cortex-A55",
    (0x51, 0xC00): "Falkor", (0x51, 0xC01): "Saphira", (0x51, 0x001): "Oryon",
    (0x48, 0xD40): "Cortex-A76", (0x48, 0xD41): "Cortex-A77", (0x48, 0xD01): "TaiShan v110",
    (0x48, 0xD02): "TaiShan v200",
    (0x6D, 0xD49): "Neoverse-N2",
    (0x4E, 0x000): "Denver", (0x4E, 0x003): "Denver 2", (0x4E, 0x004): "Carmel",
    (0x53, 0x002): "Exynos M3", (0x53, 0x003): "Exynos M4", (0x53, 0x004): "Exynos M5",
}

# Relative single-core performance of designs, used only to order designs when the
# kernel lists several without saying which CPU has which (``CPU part: 0xc07 & 0xc0f``)
# and to guess the LITTLE partner of a big core. Higher = faster.
_DESIGN_RANK: dict[str, int] = {
    "Cortex-A5": 10, "Cortex-A7": 15, "Cortex-A32": 15, "Cortex-A35": 18,
    "Cortex-A53": 20, "Cortex-A55": 25, "Cortex-A510": 27, "Cortex-A520": 28,
    "Cortex-A8": 22, "Cortex-A9": 30, "Scorpion": 28, "Krait": 35,
    "Cortex-A12": 38, "Cortex-A17": 40, "Cortex-A15": 45, "Cortex-A57": 50,
    "Cortex-A72": 55, "Kryo": 55, "Cortex-A73": 58, "Exynos M1": 58, "Exynos M2": 60,
    "Denver": 60, "Denver 2": 62, "Cortex-A75": 62, "Exynos M3": 68, "Cortex-A76": 70,
    "Exynos M4": 72, "Cortex-A77": 75, "Exynos M5": 76, "Cortex-A78": 80,
    "Cortex-A710": 82, "Cortex-X1": 88, "Cortex-A715": 84, "Cortex-A720": 86,
    "Cortex-A725": 88, "Cortex-X2": 90, "Cortex-X3": 94, "Cortex-X4": 98,
    "Cortex-X925": 102, "Oryon": 100, "Cortex-A320": 26, "C1-Nano": 29, "C1-Pro": 90,
    "C1-Premium": 100, "C1-Ultra": 106,
}

# big core design -> the LITTLE design it shipped with (pytorch/cpuinfo heuristic).
_LITTLE_FOR_BIG: dict[int, int] = {
    0x410FC0F0: 0x410FC070,  # Cortex-A15 -> Cortex-A7
    0x410FC0E0: 0x410FC070,  # Cortex-A17 -> Cortex-A7
    0x410FD070: 0x410FD030,  # Cortex-A57 -> Cortex-A53
    0x410FD080: 0x410FD030,  # Cortex-A72 -> Cortex-A53
    0x410FD090: 0x410FD030,  # Cortex-A73 -> Cortex-A53
    0x410FD0A0: 0x410FD050,  # Cortex-A75 -> Cortex-A55
    0x410FD0B0: 0x410FD050,  # Cortex-A76 -> Cortex-A55
    0x410FD0D0: 0x410FD050,  # Cortex-A77 -> Cortex-A55
    0x410FD410: 0x410FD050,  # Cortex-A78 -> Cortex-A55
    0x51AF8000: 0x51AF8010,  # Kryo 2XX Gold -> Kryo 2XX Silver
    0x518F8020: 0x518F8030,  # Kryo 3XX Gold -> Kryo 3XX Silver
    0x518F8040: 0x518F8050,  # Kryo 4XX Gold -> Kryo 4XX Silver
    0x531F0010: 0x410FD030,  # Exynos M1 -> Cortex-A53
    0x534F0010: 0x410FD030,  # Exynos M2 -> Cortex-A53
    0x531F0020: 0x410FD050,  # Exynos M3 -> Cortex-A55
}

MIDR_MODEL_MASK = 0xFF0FFFF0  # implementer, architecture, part (variant/revision off)


def midr_value(implementer: int, variant: int, part: int, revision: int) -> int:
    return (implementer << 24) | (variant << 20) | (0xF << 16) | (part << 4) | revision


def midr_fields(midr: int) -> tuple[int, int, int, int]:
    return midr >> 24 & 0xFF, midr >> 20 & 0xF, midr >> 4 & 0xFFF, midr & 0xF


def little_for_big(midr: int) -> int:
    """The LITTLE partner of a big core's MIDR (the same core if not tabulated)."""
    for big, little in _LITTLE_FOR_BIG.items():
        if (midr & MIDR_MODEL_MASK) == (big & MIDR_MODEL_MASK):
            return little
    return midr


@dataclass(frozen=True)
class ArmPart:
    vendor: str | None  # implementer name, None if unknown
    part_name: str | None  # e.g. "Kryo 4XX Silver"
    uarch: str | None  # core design, e.g. "Cortex-A55"
    problem: str | None = None


def arm_part(implementer: int | None, part: int | None, variant: int | None = None) -> ArmPart:
    """Decode an ARM implementer/part pair; unknown ids stay unknown."""
    if implementer is None:
        return ArmPart(None, None, None, "no CPU implementer")
    vendor = ARM_IMPLEMENTERS.get(implementer)
    if vendor is None:
        return ArmPart(None, None, None, f"unknown implementer 0x{implementer:02x}")
    if part is None:
        return ArmPart(vendor, None, None, "no CPU part")
    name = _ARM_PARTS.get(implementer, {}).get(part)
    if name is None:
        return ArmPart(vendor, None, None, f"unknown part 0x{part:03x} of {vendor}")
    if implementer == 0x53 and part == 0x001:
        # Mongoose M1 and M2 share part 0x001; the variant tells them apart.
        design = "Exynos M2" if variant == 4 else "Exynos M1"
        return ArmPart(vendor, design, design)
    design = _ARM_DESIGN.get((implementer, part), name)
    return ArmPart(vendor, name, design)


def design_rank(uarch: str | None) -> int:
    return _DESIGN_RANK.get(uarch or "", 0)


# --- chipsets whose kernels do not show every core in /proc/cpuinfo ------------------


@dataclass(frozen=True)
class ChipsetClusters:
    name: str
    cores: int
    cluster_cores: tuple[int, ...]  # in CPU-number order (LITTLE first on these kernels)
    cluster_midr: tuple[int, ...]


_CHIPSETS: dict[str, ChipsetClusters] = {
    c.name: c
    for c in (
        ChipsetClusters("MSM8916", 4, (4,), (0x410FD030,)),
        ChipsetClusters("MSM8939", 8, (4, 4), (0x410FD034, 0x410FD034)),
        ChipsetClusters("MSM8956", 6, (4, 2), (0x410FD034, 0x410FD080)),
        ChipsetClusters("MSM8976", 8, (4, 4), (0x410FD034, 0x410FD080)),
        ChipsetClusters("MSM8992", 6, (4, 2), (0x410FD033, 0x411FD072)),
        ChipsetClusters("MSM8994", 8, (4, 4), (0x410FD032, 0x411FD071)),
        ChipsetClusters("Exynos 5422", 8, (4, 4), (0x410FC073, 0x412FC0F3)),
        ChipsetClusters("Exynos 5430", 8, (4, 4), (0x410FC074, 0x413FC0F3)),
        ChipsetClusters("Exynos 5433", 8, (4, 4), (0x410FD031, 0x411FD070)),
        ChipsetClusters("Exynos 7420", 8, (4, 4), (0x410FD032, 0x411FD070)),
        ChipsetClusters("Exynos 8890", 8, (4, 4), (0x410FD034, 0x531F0011)),
        ChipsetClusters("Kirin 920", 8, (4, 4), (0x410FC075, 0x413FC0F3)),
        ChipsetClusters("Kirin 925", 8, (4, 4), (0x410FC075, 0x413FC0F3)),
        ChipsetClusters("Kirin 950", 8, (4, 4), (0x410FD034, 0x410FD080)),
        ChipsetClusters("Kirin 955", 8, (4, 4), (0x410FD034, 0x410FD080)),
        ChipsetClusters("MT8135", 4, (2, 2), (0x410FC073, 0x413FC0F2)),
        ChipsetClusters("MT8173", 4, (2, 2), (0x410FD032, 0x410FD080)),
        ChipsetClusters("MT8176", 6, (4, 2), (0x410FD032, 0x410FD080)),
        ChipsetClusters("MT8735", 4, (4,), (0x410FD034,)),
        ChipsetClusters("MT6592", 8, (4, 4), (0x410FC074, 0x410FC074)),
        ChipsetClusters("MT6595", 8, (4, 4), (0x410FC075, 0x410FC0E0)),
        ChipsetClusters("MT6797", 10, (4, 4, 2), (0x410FD034, 0x410FD034, 0x410FD081)),
        ChipsetClusters("MT6799", 10, (4, 4, 2), (0x410FD041, 0x410FD034, 0x410FD092)),
        ChipsetClusters("RK3399", 6, (4, 2), (0x410FD034, 0x410FD082)),
        ChipsetClusters("ATM7029", 4, (4,), (0x410FC051,)),
    )
}

_CHIPSET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(?:MSM|APQ)\s*(\d{4})", re.I), "MSM{}"),
    (re.compile(r"\bExynos\s*(\d{4})", re.I), "Exynos {}"),
    (re.compile(r"\bKirin\s*(\d{3,4})", re.I), "Kirin {}"),
    (re.compile(r"\bMT\s*(\d{4})", re.I), "MT{}"),
    (re.compile(r"\bRK\s*(\d{4})", re.I), "RK{}"),
    (re.compile(r"\bgs702[ac]\b", re.I), "ATM7029"),
    (re.compile(r"\bATM\s*(\d{4})", re.I), "ATM{}"),
)


def chipset_name(hardware: str | None) -> str | None:
    """Normalised chipset name from /proc/cpuinfo's ``Hardware`` line, if recognised."""
    if not hardware:
        return None
    for pattern, template in _CHIPSET_PATTERNS:
        m = pattern.search(hardware)
        if m:
            return template.format(*m.groups())
    return None


def chipset_clusters(chipset: str | None) -> ChipsetClusters | None:
    return _CHIPSETS.get(chipset or "")


# --- x86 ------------------------------------------------------------------------------

# Intel family 6 model -> microarchitecture (Intel SDM, kernel intel-family.h).
_INTEL_FAM6: dict[int, str] = {
    0x0F: "Core", 0x16: "Core", 0x17: "Penryn", 0x1D: "Penryn",
    0x1A: "Nehalem", 0x1E: "Nehalem", 0x1F: "Nehalem", 0x2E: "Nehalem",
    0x25: "Westmere", 0x2C: "Westmere", 0x2F: "Westmere",
    0x2A: "Sandy Bridge", 0x2D: "Sandy Bridge",
    0x3A: "Ivy Bridge", 0x3E: "Ivy Bridge",
    0x3C: "Haswell", 0x3F: "Haswell", 0x45: "Haswell", 0x46: "Haswell",
    0x3D: "Broadwell", 0x47: "Broadwell", 0x4F: "Broadwell", 0x56: "Broadwell",
    0x4E: "Skylake", 0x5E: "Skylake", 0x55: "Skylake",  # 0x55 also Cascade/Cooper Lake
    0x8E: "Kaby Lake", 0x9E: "Kaby Lake", 0xA5: "Comet Lake", 0xA6: "Comet Lake",
    0x66: "Cannon Lake",
    0x6A: "Ice Lake", 0x6C: "Ice Lake", 0x7D: "Ice Lake", 0x7E: "Ice Lake",
    0x8C: "Tiger Lake", 0x8D: "Tiger Lake", 0xA7: "Rocket Lake",
    0x97: "Alder Lake", 0x9A: "Alder Lake", 0xBE: "Gracemont",  # Alder Lake-N: E-cores only
    0xB7: "Raptor Lake", 0xBA: "Raptor Lake", 0xBF: "Raptor Lake",
    0x8F: "Sapphire Rapids", 0xCF: "Emerald Rapids", 0xAD: "Granite Rapids",
    0xAE: "Granite Rapids",
    0xAA: "Meteor Lake", 0xAC: "Meteor Lake", 0xBD: "Lunar Lake",
    0xC5: "Arrow Lake", 0xC6: "Arrow Lake", 0xB5: "Arrow Lake", 0xCC: "Panther Lake",
    0x1C: "Bonnell", 0x26: "Bonnell", 0x27: "Saltwell", 0x35: "Saltwell", 0x36: "Saltwell",
    0x37: "Silvermont", 0x4A: "Silvermont", 0x4D: "Silvermont", 0x5A: "Silvermont",
    0x5D: "Silvermont", 0x4C: "Airmont", 0x75: "Airmont",
    0x5C: "Goldmont", 0x5F: "Goldmont", 0x7A: "Goldmont Plus",
    0x86: "Tremont", 0x96: "Tremont", 0x9C: "Tremont",
    0xAF: "Sierra Forest", 0xB6: "Grand Ridge", 0xDD: "Clearwater Forest",
    0x57: "Knights Landing", 0x85: "Knights Mill",
}

# E-core designs of Intel hybrid parts (what /sys/devices/cpu_atom/cpus holds).
_INTEL_HYBRID_CORES: dict[str, tuple[str, str]] = {
    "Alder Lake": ("Golden Cove", "Gracemont"),
    "Raptor Lake": ("Raptor Cove", "Gracemont"),
    "Meteor Lake": ("Redwood Cove", "Crestmont"),
    "Lunar Lake": ("Lion Cove", "Skymont"),
    "Arrow Lake": ("Lion Cove", "Skymont"),
    "Panther Lake": ("Cougar Cove", "Darkmont"),
}

# Atom-class designs: how many cores share one L2 (a "module"). Their clusters are modules.
X86_MODULE_CORES: dict[str, int] = {
    "Bonnell": 1, "Saltwell": 1, "Silvermont": 2, "Airmont": 2, "Goldmont": 2,
    "Goldmont Plus": 4, "Tremont": 4,
}


def _amd_uarch(family: int, model: int) -> str | None:
    if family == 0x15:
        if model <= 0x0F:
            return "Bulldozer" if model < 0x02 else "Piledriver"
        if 0x10 <= model <= 0x1F:
            return "Piledriver"
        if 0x30 <= model <= 0x3F:
            return "Steamroller"
        if 0x60 <= model <= 0x7F:
            return "Excavator"
        return None
    if family == 0x16:
        return "Jaguar" if model < 0x30 else "Puma"
    if family == 0x17:
        if model in (0x01, 0x11, 0x20):
            return "Zen"
        if model in (0x08, 0x18):
            return "Zen+"
        if 0x30 <= model <= 0xAF:
            return "Zen 2"
        return "Zen"
    if family == 0x18:
        return "Zen (Hygon Dhyana)"
    if family == 0x19:
        if model <= 0x0F or 0x20 <= model <= 0x5F:
            return "Zen 3"
        if 0x10 <= model <= 0x1F or 0x60 <= model <= 0xAF:
            return "Zen 4"
        return None
    if family == 0x1A:
        return "Zen 5"
    if family == 0x10:
        return "K10"
    if family == 0x0F:
        return "K8"
    return None


@dataclass(frozen=True)
class X86Part:
    vendor: str | None
    uarch: str | None
    problem: str | None = None


def x86_part(vendor_id: str | None, family: int | None, model: int | None) -> X86Part:
    vendor = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon",
              "CentaurHauls": "Centaur", "  Shanghai  ": "Zhaoxin"}.get(vendor_id or "")
    if vendor_id is None:
        return X86Part(None, None, "no vendor_id")
    if family is None or model is None:
        return X86Part(vendor or vendor_id, None, "no cpu family/model")
    uarch: str | None = None
    if vendor == "Intel" and family == 6:
        uarch = _INTEL_FAM6.get(model)
    elif vendor == "Intel" and family == 0x13:
        uarch = "Diamond Rapids"
    elif vendor == "Intel" and family == 0x0F:
        uarch = "NetBurst"
    elif vendor in ("AMD", "Hygon"):
        uarch = _amd_uarch(family, model)
    if uarch is None:
        return X86Part(vendor or vendor_id, None,
                       f"unknown model: family 0x{family:x} model 0x{model:x}")
    return X86Part(vendor or vendor_id, uarch)


@dataclass(frozen=True)
class FlagHint:
    """An x86 feature only some designs have: a CPU showing it is one of them."""

    flag: str
    designs: frozenset[str]
    label: str  # short, for a design column: "Sapphire Rapids+"
    suggests: str  # what a CPU with the flag is, in words


_SPR_AND_LATER = frozenset({"Sapphire Rapids", "Emerald Rapids", "Granite Rapids",
                            "Diamond Rapids"})
# Most telling first. A hypervisor may hide features a design has, so only a feature the
# named design never had contradicts it.
_X86_FLAG_HINTS: dict[str, tuple[FlagHint, ...]] = {
    "Intel": (
        FlagHint("amx_tile", _SPR_AND_LATER, "Sapphire Rapids+",
                 "a Xeon server core, Sapphire Rapids or later"),
        FlagHint("avx512_fp16", _SPR_AND_LATER, "Sapphire Rapids+",
                 "a Xeon server core, Sapphire Rapids or later"),
        FlagHint("avx512f", _SPR_AND_LATER | {
            "Skylake", "Cannon Lake", "Ice Lake", "Tiger Lake", "Rocket Lake",
            "Knights Landing", "Knights Mill"}, "AVX-512 Intel core",
                 "an AVX-512 core, Skylake-SP or later"),
    ),
    "AMD": (
        FlagHint("avx512_vp2intersect", frozenset({"Zen 5"}), "Zen 5", "Zen 5"),
        FlagHint("avx512f", frozenset({"Zen 4", "Zen 5"}), "Zen 4+", "Zen 4 or later"),
    ),
}


def x86_flag_contradiction(vendor: str | None, uarch: str | None,
                           flags: set[str]) -> FlagHint | None:
    """The first feature in ``flags`` that the design ``uarch`` never had, if any (in a
    VM, the hypervisor's CPU model can name an older design than the host's)."""
    for hint in _X86_FLAG_HINTS.get(vendor or "", ()):
        if hint.flag in flags and uarch not in hint.designs:
            return hint
    return None


def intel_hybrid_designs(uarch: str | None) -> tuple[str, str] | None:
    """(P-core design, E-core design) of an Intel hybrid family, if known."""
    return _INTEL_HYBRID_CORES.get(uarch or "")
