"""Device-name keys: the normalised form under which every spelling of a chip is looked up.

The key lowercases the name, drops trademark marks, vendor and brand words ("NVIDIA",
"Instinct", "GeForce", "Graphics"), hosting suffixes ("_modal"), memory sizes ("80GB",
"141 GB") and packaging ("HBM3", "SXM4", "OAM"), and joins the remaining tokens with spaces.
Keys are compared exactly, never by prefix (see `platforms.resolve`).
"""

from __future__ import annotations

import re

NOISE_TOKENS = frozenset(
    {
        "nvidia",
        "amd",
        "intel",
        "huawei",
        "tesla",
        "geforce",
        "instinct",
        "graphics",
        "modal",
        "corporation",
        "gpu",
        "r",
        "tm",
        "oam",
        "sxm",
        "sxm4",
        "sxm5",
        "sxm6",
        "hbm",
        "hbm2",
        "hbm2e",
        "hbm3",
        "hbm3e",
    }
)
_MEMORY_SIZE = re.compile(r"^\d+(gb|g)$")
_NUMBER = re.compile(r"^\d+$")
_TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")


def tokens(name: str) -> list[str]:
    """Lowercase alphanumeric tokens of a name, trademark marks removed."""
    text = name.lower().replace("(r)", " ").replace("(tm)", " ")
    return [t for t in _TOKEN_SPLIT.split(text) if t]


def name_key(name: str) -> str:
    """The normalised lookup key of a device name ("NVIDIA_A100-SXM4-80GB" -> "a100",
    "H200 SXM 141 GB" -> "h200")."""
    words = tokens(name)
    kept: list[str] = []
    for position, word in enumerate(words):
        if word in NOISE_TOKENS or _MEMORY_SIZE.match(word):
            continue
        following = words[position + 1] if position + 1 < len(words) else ""
        if _NUMBER.match(word) and following == "gb":
            continue  # "141 GB": a memory size written with a space
        if word == "gb" and position > 0 and _NUMBER.match(words[position - 1]):
            continue
        kept.append(word)
    return " ".join(kept)


def slug(name: str) -> str:
    """A name as lowercase words joined by hyphens ("RTX A6000" -> "rtx-a6000")."""
    return "-".join(tokens(name)) or "empty"
