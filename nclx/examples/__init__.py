"""Runnable examples (``python -m nclx.examples.heat``)."""
