"""The package version, in one place (the sweep records it with every result)."""
__version__ = "0.1.0"
