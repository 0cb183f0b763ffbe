"""Hardware specifications (chips, systems). Knows no model."""
from .chip import PRESETS, ChipSpec, SystemSpec, as_system, chip, system

__all__ = ["ChipSpec", "SystemSpec", "PRESETS", "chip", "system", "as_system"]
