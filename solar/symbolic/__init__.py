"""Symbolic speed of light: bounds as formulas of the program's sizes (docs/symbolic.md)."""
