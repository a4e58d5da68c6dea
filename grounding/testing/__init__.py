"""Hypothesis strategies and axiom checks for users' own test suites."""
