"""Hardware specifications (chips, systems). Knows no model."""
from .chip import PRESETS, ChipSpec, SystemSpec, as_system, chip, chip_description, system

__all__ = ["ChipSpec", "SystemSpec", "PRESETS", "chip", "chip_description", "system", "as_system"]
